"""A test set of our own for search by meaning: 30 records of past work, and 15 questions that each ask for one
record in other words (no word of a question appears in its record; `shared_words` checks it)."""

from __future__ import annotations

import re

# (tool, observation text) as the memory-observe hook stores them: the tool, what it was given, what came back.
OBSERVATIONS: list[tuple[str, str]] = [
    ("Bash", "Bash {\"command\": \"npm test\"}\n-> jest exhausted the heap on CI; set NODE_OPTIONS=--max-old-space-size=4096 and the suite passed"),
    ("Edit", "Edit {\"file_path\": \"src/auth/token.ts\"}\n-> JWT expiry compared seconds with milliseconds; converted exp to ms before comparing"),
    ("Bash", "Bash {\"command\": \"docker compose up\"}\n-> port 5432 already bound by a local postgres; moved the container to 5433"),
    ("Edit", "Edit {\"file_path\": \"migrations/0042_orders.sql\"}\n-> added an index on orders(customer_id, created_at); the report query dropped from 9 s to 40 ms"),
    ("Bash", "Bash {\"command\": \"git bisect run make check\"}\n-> regression introduced by commit a1b2c3 which reordered middleware registration"),
    ("Edit", "Edit {\"file_path\": \"app/i18n.py\"}\n-> German umlauts garbled in PDF export; the font lacked glyphs, embedded DejaVu Sans"),
    ("Write", "Write {\"file_path\": \"deploy/nginx.conf\"}\n-> raised client_max_body_size to 50m so uploads of large photos stop failing with 413"),
    ("Bash", "Bash {\"command\": \"pytest -x tests/test_clock.py\"}\n-> flaky test depended on wall time at midnight UTC; froze time with freezegun"),
    ("Edit", "Edit {\"file_path\": \"worker/retry.go\"}\n-> retries hammered the payment API; added exponential backoff with jitter capped at 30 s"),
    ("Edit", "Edit {\"file_path\": \"web/src/Table.tsx\"}\n-> rendering 20k rows froze the browser; virtualized the list with react-window"),
    ("Bash", "Bash {\"command\": \"openssl s_client -connect api.internal:443\"}\n-> certificate chain missing intermediate; bundled the intermediate CA into the server cert"),
    ("Edit", "Edit {\"file_path\": \"settings/logging.py\"}\n-> log files filled the disk; enabled rotation at 100 MB keeping 7 files"),
    ("Edit", "Edit {\"file_path\": \"api/pagination.py\"}\n-> offset pagination skipped rows during concurrent inserts; switched to keyset cursors"),
    ("Bash", "Bash {\"command\": \"kubectl describe pod api-7f9\"}\n-> OOMKilled: memory limit 256Mi too small for the JVM; raised limit to 1Gi and set -Xmx768m"),
    ("Edit", "Edit {\"file_path\": \"src/cache.py\"}\n-> stale prices served after updates; invalidate the product key on every write"),
    ("Edit", "Edit {\"file_path\": \"scripts/backup.sh\"}\n-> nightly dump silently empty because pg_dump lacked a password; used a .pgpass file"),
    ("Bash", "Bash {\"command\": \"python -m cProfile -o out.prof etl.py\"}\n-> 80% of runtime in json.loads per line; parsed with orjson, ETL four times faster"),
    ("Edit", "Edit {\"file_path\": \"mobile/App.kt\"}\n-> app crashed on rotation because the activity was recreated; kept state in a ViewModel"),
    ("Edit", "Edit {\"file_path\": \"auth/password.py\"}\n-> passwords hashed with unsalted sha1; migrated to argon2id with rehash on next login"),
    ("Bash", "Bash {\"command\": \"terraform plan\"}\n-> drift on the S3 bucket policy edited by hand in the console; imported it back into state"),
    ("Edit", "Edit {\"file_path\": \"email/templates/welcome.html\"}\n-> Outlook ignored flexbox in the newsletter; rebuilt the layout with nested tables"),
    ("Edit", "Edit {\"file_path\": \"search/indexer.py\"}\n-> Elasticsearch mapping explosion from dynamic fields; disabled dynamic mapping for metadata"),
    ("Bash", "Bash {\"command\": \"ulimit -n\"}\n-> too many open files under load; raised nofile to 65536 in the systemd unit"),
    ("Edit", "Edit {\"file_path\": \"billing/invoice.py\"}\n-> totals off by a cent from float rounding; switched money to Decimal with banker's rounding"),
    ("Edit", "Edit {\"file_path\": \"frontend/webpack.config.js\"}\n-> bundle was 4 MB because moment shipped every locale; replaced it with date-fns"),
    ("Bash", "Bash {\"command\": \"git lfs migrate import --include='*.psd'\"}\n-> repository clone took 20 minutes due to design files; moved them to LFS"),
    ("Edit", "Edit {\"file_path\": \"api/cors.py\"}\n-> browser blocked requests from the admin subdomain; added it to the allowed origins"),
    ("Edit", "Edit {\"file_path\": \"jobs/scheduler.py\"}\n-> cron job ran twice after daylight saving change; scheduled in UTC instead of local time"),
    ("Edit", "Edit {\"file_path\": \"db/pool.py\"}\n-> connections exhausted under burst traffic; bounded the pool at 20 and added a queue timeout"),
    ("Bash", "Bash {\"command\": \"du -sh node_modules\"}\n-> CI cache restore slow; cached the npm store instead of node_modules"),
]

# (question, index into OBSERVATIONS of the record it asks for)
QUESTIONS: list[tuple[str, int]] = [
    ("unit runs crashed with out of RAM errors on the build server", 0),
    ("people could not send big pictures, server rejected them as oversized", 6),
    ("retrying charges overloaded a third party, wait longer between attempts", 8),
    ("huge grid made the page unresponsive", 9),
    ("TLS handshake failed, trust path incomplete", 10),
    ("storage full because diagnostics kept growing", 11),
    ("container killed, heap too big for its quota", 13),
    ("customers saw outdated costs after a change", 14),
    ("credentials stored with a weak digest", 18),
    ("infrastructure description differed from reality after manual tweaks", 19),
    ("bill sums were a penny wrong", 23),
    ("javascript payload too heavy due to translations of a calendar library", 24),
    ("cross origin calls refused for the back office site", 26),
    ("periodic task executed two times when clocks moved forward", 27),
    ("database sockets ran out when load spiked", 28),
]

STOPWORDS = frozenset({"a", "an", "the", "of", "to", "for", "on", "in", "at", "by", "and", "or", "with", "after",
                       "from", "as", "is", "it", "its", "be", "was", "were", "when", "due", "too", "two", "they",
                       "them", "could", "not", "because"})


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS}


def shared_words(question: str, record: str) -> set[str]:
    return words(question) & words(record)
