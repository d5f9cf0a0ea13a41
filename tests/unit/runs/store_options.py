"""Run-store options as a user sets them for S3: a region, and a secret key that must
never leave the driver's hand-off (argv, the plan record, a child's environment)."""

from __future__ import annotations

OPTIONS = {"region": "us-east-1", "secret_key": "s3-secret-value"}
