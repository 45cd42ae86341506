"""Bad input, fuzzed: schemathesis (pinned in tools/requirements.txt) generates requests
from each public server's OpenAPI document (GET /openapi.json) — valid ones and invalid
ones — and sends them to a real predex, signing the order book's authenticated requests
with a real L2 key, as the official clients do.

Run by the integration test `fuzz::schemathesis_finds_nothing`, which sets the servers'
URLs and the key in the environment and checks the state before and after. Fails on: any
5xx; any error whose body is not exactly {"error": "<non-empty string>"}; any response the
document does not allow (status, content type, schema); an invalid request accepted; any
request slower than 5 s; a run over its time budget. Deterministic (derandomized), bounded
by examples per operation.
"""

import base64
import hashlib
import hmac
import json
import os
import sys
import time
from urllib.parse import urlparse

import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import checks
from schemathesis.generation import GenerationMode

SERVERS = {name: os.environ[f"PREDEX_{name.upper()}"] for name in ("clob", "catalogue", "analytics", "bridge")}
ADDRESS = os.environ["PREDEX_FUZZ_ADDRESS"]
KEY = os.environ["PREDEX_FUZZ_KEY"]
SECRET = os.environ["PREDEX_FUZZ_SECRET"]
PASSPHRASE = os.environ["PREDEX_FUZZ_PASSPHRASE"]
EXAMPLES = int(os.environ.get("PREDEX_FUZZ_EXAMPLES", "50"))
BUDGET_SECS = float(os.environ.get("PREDEX_FUZZ_BUDGET_SECS", "270"))
SLOW_SECS = 5.0

# Not fuzzed with the run's own key: it would delete the key every later request signs with.
SKIP = {("DELETE", "/auth/api-key")}

CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
    checks.negative_data_rejection,
]

session = requests.Session()
sent = 0
failures = []
statuses = {}


def l2_headers(method, path, body):
    """SPEC §5.3: HMAC-SHA256 over timestamp + method + path + body, keyed by the secret."""
    ts = str(int(time.time()))
    message = (ts + method + path + body.decode("utf-8", "replace")).encode()
    digest = hmac.new(base64.urlsafe_b64decode(SECRET), message, hashlib.sha256).digest()
    return {
        "POLY_ADDRESS": ADDRESS,
        "POLY_SIGNATURE": base64.urlsafe_b64encode(digest).decode(),
        "POLY_TIMESTAMP": ts,
        "POLY_API_KEY": KEY,
        "POLY_PASSPHRASE": PASSPHRASE,
    }


def error_body(response):
    """Every error is exactly {"error": "<non-empty string>"} (SPEC §7)."""
    if response.status_code < 400:
        return None
    try:
        body = response.json()
    except ValueError:
        return f"error body is not JSON: {response.text[:200]!r}"
    if not (isinstance(body, dict) and list(body) == ["error"] and isinstance(body["error"], str) and body["error"]):
        return f"error body is not {{\"error\": message}}: {response.text[:200]!r}"
    return None


def send(case, base, signed):
    """Sends `case` with its body serialized once, so that the signature covers the bytes sent."""
    global sent
    kwargs = case.as_transport_kwargs(base_url=base)
    headers = dict(kwargs.pop("headers", None) or {})
    body = b""
    if "json" in kwargs:
        body = json.dumps(kwargs.pop("json")).encode()
        headers["Content-Type"] = "application/json"
    elif kwargs.get("data") is not None:
        data = kwargs.pop("data")
        body = data.encode() if isinstance(data, str) else bytes(data)
    if signed:
        headers.update(l2_headers(kwargs["method"].upper(), urlparse(kwargs["url"]).path, body))
    sent += 1
    return session.request(
        kwargs["method"], kwargs["url"], params=kwargs.get("params"), headers=headers, data=body or None, timeout=30
    )


def fuzz(server, base, operation, mode, deadline):
    method, path = operation.method.upper(), operation.path
    secured = bool(operation.definition.raw.get("security"))
    label = f"{server} {method} {path} ({mode.value})"

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def run(case):
        if time.monotonic() > deadline:
            return
        started = time.monotonic()
        # The document's security scheme is a header; a case generated without it (the
        # negative run's missing credentials) goes unsigned and must be refused.
        response = send(case, base, secured and "POLY_API_KEY" in (case.headers or {}))
        took = time.monotonic() - started
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        problems = []
        if took > SLOW_SECS:
            problems.append(f"took {took:.1f} s")
        shape = error_body(response)
        if shape:
            problems.append(shape)
        try:
            case.validate_response(response, checks=CHECKS)
        except (Exception, BaseExceptionGroup) as e:  # the checks' failures, grouped
            for x in getattr(e, "exceptions", None) or [e]:
                lines = [line.strip() for line in str(x).strip().splitlines() if line.strip()] or [repr(x)]
                problems.append(" / ".join([lines[0]] + [line for line in lines if line.startswith("Invalid component")]))
        if problems:
            failures.append(
                f"{label}: {response.status_code} {response.text[:160]!r}\n"
                f"    request: {case.path_parameters or ''} {case.query or ''} {str(case.body)[:160] if case.body is not None else ''}\n"
                f"    " + "\n    ".join(dict.fromkeys(problems))
            )

    try:
        run()
    except Unsatisfiable:
        # Nothing to make invalid (no parameters, no body): the positive run covered it.
        pass


def main():
    deadline = time.monotonic() + BUDGET_SECS
    operations = 0
    for server, base in SERVERS.items():
        schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
        for result in schema.get_all_operations():
            operation = result.ok()
            if (operation.method.upper(), operation.path) in SKIP:
                continue
            operations += 1
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                fuzz(server, base, operation, mode, deadline)
    over = time.monotonic() > deadline
    print(f"schemathesis: {operations} operations, {sent} requests, statuses {dict(sorted(statuses.items()))}")
    # One report per operation and kind of problem.
    distinct = {}
    for f in failures:
        head, _, rest = f.partition("\n")
        distinct.setdefault((head.split(":")[0], rest.splitlines()[-1]), f)
    for f in list(distinct.values())[:80]:
        print(f)
    if failures or over:
        print(f"schemathesis: {len(failures)} failures{'; over the time budget' if over else ''}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
