"""Secret redaction and private-tag stripping: what may never reach storage or logs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hooks.memory.tags import strip_tags
from hooks.redaction import find_secrets, redact

SECRETS = {
    "anthropic-api-key": "sk-ant-api03-" + "a1B2c3D4e5" * 3,
    "openai-api-key": "sk-proj-" + "Ab12Cd34Ef56Gh78" * 3,
    "aws-access-key-id": "AKIA" + "ABCDEFGHIJ234567",
    "github-token": "ghp_" + "a1b2c3d4e5f6" * 3,
    "slack-token": "xoxb-1234567890-abcdefghij",
    "google-api-key": "AIza" + "B" * 35,
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
}


def test_each_kind_is_found_and_redacted():
    for kind, secret in SECRETS.items():
        text = f"before {secret} after"
        assert [f.kind for f in find_secrets(text)] == [kind], kind
        assert redact(text) == f"before [REDACTED:{kind}] after"


def test_private_keys_assignments_and_url_credentials():
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
    assert redact(f"x\n{key}\ny") == "x\n[REDACTED:private-key]\ny"
    assert redact("-----BEGIN RSA PRIVATE KEY-----\nMIIE never ends") == "[REDACTED:private-key]"
    assert redact('DB_PASSWORD="s3cr3t-value-9"') == 'DB_PASSWORD="[REDACTED:assigned-secret]"'
    assert redact("postgres://admin:hunter22@db.local/app") == "postgres://[REDACTED:url-credentials]@db.local/app"


def test_code_and_prose_are_left_alone():
    for text in ["token = self.current_token", "password: required", "the secret garden", "sk-learn is a library",
                 "api_key = os.environ['API_KEY']", "Bearer auth uses a header"]:
        assert find_secrets(text) == [], text


_filler = st.text(alphabet=st.characters(codec="ascii", exclude_categories=("Cc",)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.one_of(_filler, st.sampled_from(list(SECRETS.values()))), max_size=8))
def test_redacted_text_holds_no_secret(parts):
    text = " ".join(parts)
    out = redact(text)
    for secret in SECRETS.values():
        assert secret not in out
    assert find_secrets(out) == [] or all(f.kind == "assigned-secret" for f in find_secrets(out))


def test_strip_tags_cases():
    assert strip_tags("a <private>x</private> b") == "a  b"
    assert strip_tags("<PRIVATE>x<private>y</private>z</Private>w") == "w"  # nesting, any case
    assert strip_tags("keep <private note='1'>x</private>this") == "keep this"
    assert strip_tags("stray </private> close") == "stray  close"
    assert strip_tags("open <private>never closed") == "open "
    assert strip_tags("<session-continuity>c</session-continuity>q<memory-context>m</memory-context>") == "q"
    assert strip_tags("<p>html</p> <privates>not ours</privates>") == "<p>html</p> <privates>not ours</privates>"
    assert strip_tags("<priv<private>x</private>ate>SECRET</private>ok") == ""  # a spliced tag is a tag too


def test_strip_tags_drops_the_rest_after_100_tags():
    text = "<private>a</private>" * 120 + "tail"
    assert strip_tags(text) == ""
    assert strip_tags("<private>a</private>" * 10 + "tail") == "tail"


_tagged = st.lists(st.sampled_from(["a", " ", "<", ">", "/", "<private>", "</private>", "<priv", "ate>", "<private x>",
                                    "<system-reminder>", "</system-reminder>"]), max_size=30).map("".join)
_inside = st.lists(st.sampled_from(["a", " ", "<", ">", "<private>", "<priv", "ate>"]), max_size=10).map("".join)


@settings(max_examples=300, deadline=None)
@given(before=_tagged, inside1=_inside, inside2=_inside, after=_tagged)
def test_private_content_never_survives(before, inside1, inside2, after):
    text = f"{before}<private>{inside1}SECRETWORD{inside2}</private>{after}"
    out = strip_tags(text)
    assert "SECRETWORD" not in out
    assert strip_tags(out) == out  # a fixpoint: nothing left to strip
