"""The secret corpus: one realistic sample per credential format and harmless look-alikes, shared by the redaction tests and bench/secret_corpus.py.

Samples are generated from a fixed seed in each format's documented shape, so
no real-looking credential sits in the repository as a literal.
"""

from __future__ import annotations

import base64
import random
import string
from dataclasses import dataclass

_rng = random.Random(20261123)

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
URLSAFE = ALNUM + "_-"
B64 = ALNUM + "+/"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def r(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


@dataclass(frozen=True, slots=True)
class Sample:
    """One format: its name, a line as it would appear, and the secret part of that line (what must never survive)."""

    name: str
    line: str
    secret: str


def _s(name: str, secret: str, template: str = "{}") -> Sample:
    return Sample(name, template.format(secret), secret)


_pem_body = "\n".join(r(B64, 64) for _ in range(4))
_jwt = ".".join([
    base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("="),
    base64.urlsafe_b64encode(b'{"sub":"1234567890","name":"Ada","iat":1516239022}').decode().rstrip("="),
    r(URLSAFE, 43),
])

SECRETS: tuple[Sample, ...] = (
    _s("Anthropic API key", "sk-ant-api03-" + r(URLSAFE, 93) + "AA", "ANTHROPIC_KEY_IN_USE {}"),
    _s("OpenAI legacy key", "sk-" + r(ALNUM, 20) + "T3BlbkFJ" + r(ALNUM, 20), "using {} now"),
    _s("OpenAI project key", "sk-proj-" + r(URLSAFE, 156), "key {}"),
    _s("OpenAI service-account key", "sk-svcacct-" + r(URLSAFE, 74), "svc {}"),
    _s("OpenRouter key", "sk-or-v1-" + r(HEX, 64), "router {}"),
    _s("Hugging Face token", "hf_" + r(string.ascii_letters, 34), "hub login {}"),
    _s("Groq API key", "gsk_" + r(ALNUM, 52), "groq {}"),
    _s("xAI API key", "xai-" + r(ALNUM, 80), "grok {}"),
    _s("Replicate token", "r8_" + r(ALNUM, 37), "replicate {}"),
    _s("AWS access key id", "AKIA" + r(UPPER_DIGITS, 16), "aws_access_key_id = {}"),
    _s("AWS secret access key", r(B64, 40), "aws_secret_access_key = {}"),
    _s("AWS session key id", "ASIA" + r(UPPER_DIGITS, 16), "{}"),
    _s("Google API key", "AIza" + r(URLSAFE, 35), "maps key {}"),
    _s("Google OAuth client secret", "GOCSPX-" + r(URLSAFE, 28), '"client_secret":"{}"'),
    _s("Google OAuth access token", "ya29." + r(URLSAFE, 120), "{}"),
    _s("Azure storage account key", "AccountKey=" + r(B64, 86) + "==",
       "DefaultEndpointsProtocol=https;AccountName=acme;{};EndpointSuffix=core.windows.net"),
    _s("Azure AD client secret", r(ALNUM, 3) + "8Q~" + r(URLSAFE + "~.", 34), "AZURE_CLIENT_SECRET {}"),
    _s("Azure SAS signature", "sig=" + r(ALNUM + "%", 44) + "%3D",
       "https://acme.blob.core.windows.net/c/f?sv=2022-11-02&se=2026-12-01&{}"),
    _s("Azure DevOps PAT", r(ALNUM, 76) + "AZDO" + r(ALNUM, 4), "ado {}"),
    _s("DigitalOcean token", "dop_v1_" + r(HEX, 64), "doctl auth init -t {}"),
    _s("Heroku API key", "HRKU-AA" + r(URLSAFE, 58), "heroku {}"),
    _s("Databricks token", "dapi" + r(HEX, 32), "databricks {}"),
    _s("Supabase access token", "sbp_" + r(HEX, 40), "supabase {}"),
    _s("HashiCorp Vault token", "hvs." + r(URLSAFE, 90), "VAULT {}"),
    _s("Terraform Cloud token", r(ALNUM, 14) + ".atlasv1." + r(URLSAFE, 67), "tfc {}"),
    _s("Doppler token", "dp.pt." + r(ALNUM, 43), "doppler {}"),
    _s("Pulumi token", "pul-" + r(HEX, 40), "pulumi {}"),
    _s("GitHub classic token", "ghp_" + r(ALNUM, 36), "git push https://x@github.com {}"),
    _s("GitHub OAuth token", "gho_" + r(ALNUM, 36), "{}"),
    _s("GitHub fine-grained PAT", "github_pat_" + r(ALNUM, 22) + "_" + r(ALNUM, 59), "{}"),
    _s("GitLab PAT", "glpat-" + r(URLSAFE, 20), "gitlab {}"),
    _s("npm token", "npm_" + r(ALNUM, 36), "npm {}"),
    _s(".npmrc auth token", r(ALNUM, 36), "//registry.npmjs.org/:_authToken={}"),
    _s("PyPI token", "pypi-AgEIcHlwaS5vcmc" + r(URLSAFE, 140), "TWINE_PASSWORD {}"),
    _s("Docker Hub PAT", "dckr_pat_" + r(URLSAFE, 27), "docker login -u ada --password-stdin <<< {}"),
    _s("Docker config auth", base64.b64encode(b"ada:" + r(ALNUM, 18).encode()).decode(),
       '{{"auths": {{"https://index.docker.io/v1/": {{"auth": "{}"}}}}}}'),
    _s("Atlassian API token", "ATATT3xFfGF0" + r(URLSAFE, 180), "jira {}"),
    _s("Postman API key", "PMAK-" + r(HEX, 24) + "-" + r(HEX, 34), "{}"),
    _s("Linear API key", "lin_api_" + r(ALNUM, 40), "{}"),
    _s("Notion integration token", "ntn_" + r(ALNUM, 46), "{}"),
    _s("Airtable PAT", "pat" + r(ALNUM, 14) + "." + r(HEX, 64), "{}"),
    _s("Shopify access token", "shpat_" + r(HEX, 32), "{}"),
    _s("Slack bot token", "xoxb-" + r(string.digits, 12) + "-" + r(string.digits, 13) + "-" + r(ALNUM, 24), "{}"),
    _s("Slack user token", "xoxp-" + r(string.digits, 12) + "-" + r(string.digits, 12) + "-" + r(HEX, 32), "{}"),
    _s("Slack app-level token", "xapp-1-A" + r(UPPER_DIGITS, 10) + "-" + r(string.digits, 13) + "-" + r(HEX, 64), "{}"),
    _s("Slack webhook", "https://hooks.slack.com/services/T" + r(UPPER_DIGITS, 8) + "/B" + r(UPPER_DIGITS, 10)
       + "/" + r(ALNUM, 24), "curl -X POST {}"),
    _s("Discord webhook", "https://discord.com/api/webhooks/" + r(string.digits, 18) + "/" + r(URLSAFE, 68), "{}"),
    _s("Telegram bot token", r(string.digits, 10) + ":AA" + r(URLSAFE, 33), "bot {}"),
    _s("Stripe live secret key", "sk_live_" + r(ALNUM, 99), "{}"),
    _s("Stripe test secret key", "sk_test_" + r(ALNUM, 99), "stripe {}"),
    _s("Stripe restricted key", "rk_live_" + r(ALNUM, 99), "{}"),
    _s("Stripe webhook secret", "whsec_" + r(ALNUM, 32), "{}"),
    _s("Square access token", "sq0atp-" + r(URLSAFE, 22), "{}"),
    _s("Twilio API key", "SK" + r(HEX, 32), "twilio {}"),
    _s("SendGrid API key", "SG." + r(URLSAFE, 22) + "." + r(URLSAFE, 43), "{}"),
    _s("Mailgun API key", "key-" + r(HEX, 32), "mailgun {}"),
    _s("Mailchimp API key", r(HEX, 32) + "-us14", "mailchimp {}"),
    _s("New Relic user key", "NRAK-" + r(UPPER_DIGITS, 27), "{}"),
    _s("Grafana service account token", "glsa_" + r(ALNUM, 32) + "_" + r(HEX, 8), "{}"),
    _s("Sentry auth token", "sntrys_" + r(URLSAFE, 120), "{}"),
    _s("age secret key", "AGE-SECRET-KEY-1" + r(BECH32, 58), "# {}"),
    _s("JWT", _jwt, "session={}"),
    _s("Bearer header", r(URLSAFE, 40), "Authorization: Bearer {}"),
    _s("Basic auth header", base64.b64encode(b"admin:" + r(ALNUM, 14).encode()).decode(), "Authorization: Basic {}"),
    _s("Password in URL", r(ALNUM, 16), "postgres://app:{}@db.internal:5432/prod"),
    _s("Password in URL, no user", r(ALNUM, 16), "redis://:{}@cache:6379/0"),
    _s(".netrc password", r(ALNUM, 14), "machine api.example.org login ada password {}"),
    _s("Connection-string password", r(ALNUM, 14), "Server=db;Database=app;User Id=sa;Password={};"),
    _s("Password assignment", r(ALNUM, 12) + "7", 'DB_PASSWORD="{}"'),
    _s("Secret in YAML", r(ALNUM, 24), "client_secret: {}"),
    _s("Command-line password", r(ALNUM, 12) + "3", "mysql --password {} -h db"),
    _s("RSA private key", f"-----BEGIN RSA PRIVATE KEY-----\n{_pem_body}\n-----END RSA PRIVATE KEY-----", "{}"),
    _s("OpenSSH private key", f"-----BEGIN OPENSSH PRIVATE KEY-----\n{_pem_body}\n-----END OPENSSH PRIVATE KEY-----",
       "{}"),
    _s("PGP private key block", f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{_pem_body}\n-----END PGP PRIVATE KEY BLOCK-----",
       "{}"),
)

# Things that look like secrets to a careless pattern and are not: each must come out of redaction unchanged.
LOOKALIKES: tuple[str, ...] = (
    "request_id: 3f2b8c1e-9d4a-4e6b-8f1a-2c3d4e5f6a7b",  # UUID
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",  # git SHA
    "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "image: python@sha256:" + "4f" * 32,
    "integrity sha512-" + base64.b64encode(bytes(range(64))).decode(),
    "data:image/png;base64," + base64.b64encode(bytes(range(256)) * 4).decode(),
    'token_endpoint = "https://oauth2.googleapis.com/token"',
    'password_field = "password"',
    "OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    'api_key = "<your key>"',
    "password: changeme",
    "API_KEY=your-api-key-here",
    "token = self.current_token",
    "password: required",
    "secret_key = os.environ['SECRET_KEY']",
    "Authorization: Bearer ${TOKEN}",
    "max_tokens = 4096",
    'tokenizer = "cl100k_base"',
    'author = "Ada Lovelace 1815"',
    'token_type: "bearer"',
    "password = None",
    "DB_PASSWORD=${DB_PASSWORD}",
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 ada@laptop",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n-----END CERTIFICATE-----",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "https://ada@github.com/acme/app.git",
    "postgres://localhost:5432/app",
    "ghp_000000000000000000000000000000000000",
    "sk-learn is a library; scikit-learn==1.5.2",
    "the secret garden has 12 rooms",
    "Bearer auth uses a header",
    "secret_redaction_enabled = True",
    'password_hint: "first pet"',
    "AKIAIOSFODNN7EXAMPLE",
    "token_url: https://example.com/oauth/token",
    "passwordless login (magic link) since 2024",
)
