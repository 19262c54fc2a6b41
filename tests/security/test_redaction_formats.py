"""The one redaction against the secret corpus: every format caught wherever it sits in a text, every look-alike left alone."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hooks.redaction import find_secrets, redact, redact_value
from tests.security.secret_samples import LOOKALIKES, SECRETS, Sample


def _escaped(secret: str) -> str:
    """How the secret itself reads inside JSON text (a PEM block's newlines become `\\n`)."""
    return json.dumps(secret)[1:-1]


def test_the_corpus_is_as_large_as_promised():
    assert len({s.name for s in SECRETS}) >= 40
    assert len(set(LOOKALIKES)) >= 20


@pytest.mark.parametrize("sample", SECRETS, ids=lambda s: s.name)
def test_caught_in_plain_text(sample: Sample):
    out = redact(sample.line)
    assert sample.secret not in out
    assert "[REDACTED:" in out


@pytest.mark.parametrize("sample", SECRETS, ids=lambda s: s.name)
def test_caught_on_the_second_line_of_a_tool_output(sample: Sample):
    output = f"$ ./deploy.sh --verbose\n{sample.line}\ndone in 0.4 s\n"
    out = redact(output)
    assert sample.secret not in out
    # The lines around it survive: redaction takes the secret, not the output.
    assert out.startswith("$ ./deploy.sh --verbose\n") and out.endswith("\ndone in 0.4 s\n")


@pytest.mark.parametrize("sample", SECRETS, ids=lambda s: s.name)
def test_caught_inside_json_encoded_text(sample: Sample):
    # The bug this round fixes: a tool response JSON-encoded before redaction glued `\n` onto the token.
    for encoded in (
        json.dumps({"stdout": f"first line\n{sample.line}\nlast", "exit_code": 0}),
        json.dumps({"stdout": f"first line\n{sample.line}"}, ensure_ascii=False, indent=2),
        json.dumps(json.dumps({"stdout": f"a\n{sample.line}"})),  # JSON inside JSON
    ):
        out = redact(encoded)
        assert sample.secret not in out and _escaped(sample.secret) not in out, encoded[:80]
        # Still one valid document: redaction never breaks the encoding around the secret.
        json.loads(out)


@pytest.mark.parametrize("sample", SECRETS, ids=lambda s: s.name)
def test_caught_inside_nested_structures(sample: Sample):
    response = {
        "tool_response": {
            "stdout": f"ok\n{sample.line}",
            "results": [{"lines": ["ok", sample.line]}, ("tuple", sample.line)],
            sample.line: "a secret in a key",
        }
    }
    out = json.dumps(redact_value(response))
    assert sample.secret not in out and _escaped(sample.secret) not in out


@pytest.mark.parametrize("lookalike", LOOKALIKES)
def test_lookalikes_are_left_alone(lookalike: str):
    assert find_secrets(lookalike) == []
    assert redact(lookalike) == lookalike
    assert redact(f"header\n{lookalike}\nfooter") == f"header\n{lookalike}\nfooter"
    encoded = json.dumps({"stdout": f"first\n{lookalike}"})
    assert redact(encoded) == encoded
    assert redact_value({"k": [lookalike]}) == {"k": [lookalike]}


def test_a_secret_under_a_secret_named_key_is_caught_without_the_name_in_the_string():
    config = {"database": {"password": "x9Yv3kQ2mT", "host": "db.internal"}, "api_key": "aZ81kq0PzWm4"}
    out = redact_value(config)
    assert out == {"database": {"password": "[REDACTED:assigned-secret]", "host": "db.internal"},
                   "api_key": "[REDACTED:assigned-secret]"}


def test_redacted_output_holds_nothing_redaction_would_find_again():
    text = "\n".join(s.line for s in SECRETS)
    once = redact(text)
    assert redact(once) == once
    for sample in SECRETS:
        assert sample.secret not in once


_filler = st.text(alphabet=st.characters(codec="ascii", exclude_categories=("Cc",)), max_size=30)
_secrets = st.sampled_from([s.secret for s in SECRETS if "\n" not in s.secret and s.secret == s.line])
_joiners = st.sampled_from([" ", "\n", "\t", "\\n", '"', "'", "=", ": ", ",", "(", "[", "{", "`", "|", ";"])


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.tuples(_filler, _joiners, _secrets, _joiners), max_size=6))
def test_any_surrounding_text_and_separators_keep_nothing(parts):
    text = "".join(f"{pre}{j1}{secret}{j2}" for pre, j1, secret, j2 in parts)
    out = redact(text)
    for _, _, secret, _ in parts:
        assert secret not in out
