import pytest

from goodput_agent.redact import MASK, redact


@pytest.mark.parametrize("text,secret", [
    ("export WANDB_API_KEY=0123456789abcdef", "0123456789abcdef"),
    ("HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz012345", "hf_abcdefghijklmnopqrstuvwxyz012345"),
    ('curl -H "Authorization: Bearer eyJhbGciOi.abc123456789.def" http://x', "eyJhbGciOi"),
    ("AWS_SECRET_ACCESS_KEY: wJalrXUtnFEMI/K7MDENG", "wJalrXUtnFEMI/K7MDENG"),
    ("aws key AKIAIOSFODNN7EXAMPLE in env", "AKIAIOSFODNN7EXAMPLE"),
    ("mysql --password=hunter2 -u root", "hunter2"),
    ("postgres://svc:s3cr3t@db:5432/x", "s3cr3t"),
    ("ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnop", "sk-ant-api03-abcdefghijklmnop"),
    ('{"name": "HF_TOKEN", "value": "abcd1234secret"}', "abcd1234secret"),
    ('{"db_password": "hunter2x"}', "hunter2x"),
    ("MYSQL_PWD=hunter2x mysql -u root", "hunter2x"),
    ("X-Api-Key: abcdef123456", "abcdef123456"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
     "MIIEpAIBAAKCAQEA"),
])
def test_secrets_are_masked(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out
    assert MASK in out


@pytest.mark.parametrize("text", [
    "NCCL WARN NET/IB : Got completion from peer 10.0.0.5<54862> with status=12",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB.",
    "Avg prompt throughput: 23998.2 tokens/s, max_num_batched_tokens=8192",
    "PWD=/home/alice/run OLDPWD=/home/alice",
    '{"max_tokens": "12"}',
])
def test_ordinary_log_lines_are_untouched(text: str) -> None:
    assert redact(text) == text
