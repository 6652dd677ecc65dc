import pytest

from goodput_agent.core.redact import MASK, redact


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
    # formats the attack pass found missed (examples from each provider's documentation)
    ("aws_secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY in a log", "wJalrXUtnFEMI/K7MDENG"),
    ("notify https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
     "XXXXXXXXXXXXXXXXXXXXXXXX"),
    ("OPENAI=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z_Ab3dEf6hIj9", "Ab3dEf6hIj9kLm2nOp5q"),
    ("key AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe used", "AIzaSyDaGmWKa4JsXZ"),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
    ("git clone https://x/y.git with glpat-8Jn2_kD9fQxR4vZ1mT6s", "glpat-8Jn2_kD9fQxR4vZ1mT6s"),
    ("//registry.npmjs.org/:_authToken npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
     "npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    ("DB_PASS=hunter2x ./run.sh", "hunter2x"),
    ("MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw", "MIIEowIBAAKCA"),
    ('{"name": "SLACK_WEBHOOK_URL", "value": "https://hooks.slack.com/services/T1/B2/c3"}',
     "hooks.slack.com/services/T1"),
    ('{"name": "WANDB_KEY", "value": "0123456789abcdef0123456789abcdef01234567"}',
     "0123456789abcdef0123"),
    ('{"name": "MY_SETTING", "value": "Zx8kQ2mW9vB4nR7tY1pL5sD3fG6hJ0a"}',
     "Zx8kQ2mW9vB4nR7tY1pL"),
    ("        - name: RUN_ID\n          value: 9fK2mQ8xW4vB7nR1tY5pL3sD6\n",
     "9fK2mQ8xW4vB7nR1tY5pL3sD6"),
    ("export HOOK_SECRET_X=Zx8kQ2mW9vB4nR7tY1pL5sD3fG6", "Zx8kQ2mW9vB4nR7tY1pL5sD3fG6"),
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
    "BYPASS=1 NCCL_DEBUG=INFO CUDA_VISIBLE_DEVICES=0,1,2,3",
    '{"name": "MODEL", "value": "meta-llama/Llama-3.1-8B-Instruct"}',
    "commit 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a",
    "PATH=/usr/local/cuda/bin:/usr/bin HOSTNAME=gpu-node-03",
    "[rank3]:[E ProcessGroupNCCL.cpp:1182] Watchdog caught collective operation timeout",
    # a hyphenated word that ends in a secret's name is no flag
    "mean inter-token latency held; a non-secret value; the pre-token stage",
])
def test_ordinary_log_lines_are_untouched(text: str) -> None:
    assert redact(text) == text


def test_a_private_key_excerpted_line_by_line_is_masked_line_by_line() -> None:
    """The parsers excerpt one line at a time: the body lines stand alone."""
    block = ("-----BEGIN OPENSSH PRIVATE KEY-----\n"
             "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
             "QyNTUxOQAAACDk9SlOqFhV4hAfsNIgVRiC0nqTQ2mFdNVRQFqvc8qf4QAAAJgFpNcTBaTX\n"
             "-----END OPENSSH PRIVATE KEY-----")
    for line in block.splitlines()[1:3]:
        assert redact(line) == MASK


def test_environment_entries_are_masked_by_shape_whatever_their_name() -> None:
    from goodput_agent.core.redact import redact_data

    pod = {"env": [{"name": "SLACK_WEBHOOK_URL", "value": "https://hooks.slack.com/x/y/z"},
                   {"name": "WANDB_KEY", "value": "0123456789abcdef0123456789abcdef01234567"},
                   {"name": "RUN_NAME", "value": "llama-70b-pretrain"}]}
    out = redact_data(pod)["env"]
    assert [e["value"] for e in out] == [MASK, MASK, "llama-70b-pretrain"]
