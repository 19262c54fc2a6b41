"""The adversarial suite drives real sidecars with the end-to-end harness."""

from tests.e2e.conftest import sidecar  # noqa: F401  (fixture)
