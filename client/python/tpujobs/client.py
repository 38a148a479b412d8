"""The client of one tpujobs service: every operation of api/openapi.json."""

import json
import os
import uuid
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Union

from ._http import Transport, operation
from .errors import CheckUnavailable, NotFound
from .job import Job

# What `check` skips when it walks a directory, as `tpujobs check` does.
_SKIPPED_DIRS = {".git", ".hg", ".svn", "__pycache__", "node_modules", ".tox", ".venv", "venv",
                 "env", ".mypy_cache"}


def _labels(label: Union[None, str, Mapping[str, str], Sequence[str]]) -> Optional[List[str]]:
    if label is None:
        return None
    if isinstance(label, str):
        return [label]
    if isinstance(label, Mapping):
        return ["%s=%s" % (k, v) for k, v in label.items()]
    return list(label)


def _python_files(paths: Iterable[Union[str, "os.PathLike[str]"]]) -> List[str]:
    found: List[str] = []
    for path in map(os.fspath, paths):
        if not os.path.isdir(path):
            found.append(path)
            continue
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS
                             and not os.path.exists(os.path.join(root, d, "pyvenv.cfg")))
            found.extend(os.path.join(root, f) for f in sorted(files) if f.endswith(".py"))
    return found


def _read_text(path: str) -> Dict[str, str]:
    with open(path, encoding="utf-8", errors="replace") as f:
        return {"path": path, "text": f.read()}


class Client:
    """A tpujobs service. ``url`` defaults to $TPUJOBS_URL (else
    http://127.0.0.1:8080), ``token`` to $TPUJOBS_TOKEN, as the CLI's."""

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None,
                 timeout: float = 60.0, retries: int = 5):
        if url is None:
            url = os.environ.get("TPUJOBS_URL") or None
        if token is None:
            token = os.environ.get("TPUJOBS_TOKEN") or None
        self._http = Transport(url, token, timeout=timeout, retries=retries)

    @property
    def url(self) -> str:
        return self._http.url

    # ------------------------------------------------------------------ jobs

    @operation("POST", "/v1/jobs")
    def _submit(self, spec: Mapping[str, Any], idempotency_key: Optional[str]) -> List[Job]:
        # Every submit carries an Idempotency-Key (a new one when none is given),
        # so a retry after a lost answer or a 503 never submits twice.
        key = idempotency_key or "py-" + uuid.uuid4().hex
        answer = self._http.json_call("POST", "/v1/jobs", dict(spec), expect=(200, 201),
                                      headers={"Idempotency-Key": key}, safe=True)
        if "jobs" in answer and "id" not in answer:  # a sweep: every child, in order
            return [Job(self, data) for data in answer["jobs"]]
        return [Job(self, answer)]

    def submit(self, spec: Mapping[str, Any], idempotency_key: Optional[str] = None) -> Job:
        """Submits a spec and returns the job (for a sweep: its first child, whose
        ``array["id"]`` lists them all with ``list(array=...)``; ``submit_sweep``
        returns every child). The same ``idempotency_key`` and spec give the same
        job again. Raises ``SpecRejected`` (``.errors``), ``BadRequest``, and
        ``Conflict`` (the key used before with another spec)."""
        return self._submit(spec, idempotency_key)[0]

    def submit_sweep(self, spec: Mapping[str, Any],
                     idempotency_key: Optional[str] = None) -> List[Job]:
        """Submits a spec with ``sweep`` and returns every child job, in index order."""
        return self._submit(spec, idempotency_key)

    @operation("POST", "/v1/jobs:validate")
    def validate(self, spec: Mapping[str, Any]) -> Dict[str, Any]:
        """Checks a spec without storing it: ``{valid, warnings, resolved,
        estimate}``; raises ``SpecRejected`` when it would be refused."""
        return self._http.json_call("POST", "/v1/jobs:validate", dict(spec), safe=True)

    @operation("GET", "/v1/jobs/{id}")
    def get(self, job_id: int) -> Job:
        """One job; ``NotFound`` when there is none (or it is another tenant's)."""
        return Job(self, self._http.json_call("GET", "/v1/jobs/{id}", path_params={"id": job_id},
                                              safe=True))

    def job(self, job_id: int) -> Job:
        """A handle on a job without reading it (``refresh()`` reads it)."""
        return Job(self, {"id": int(job_id)})

    @operation("GET", "/v1/jobs")
    def list(self, state: Union[None, str, Sequence[str]] = None,
             label: Union[None, str, Mapping[str, str], Sequence[str]] = None,
             name: Optional[str] = None, array: Optional[int] = None,
             page_size: Optional[int] = None) -> Iterator[Job]:
        """Every job matching the filters, following the cursor pages lazily.
        ``state``: a state or several; ``label``: ``{"key": "value"}`` or
        ``"key=value"``; ``array``: the children of one sweep."""
        states = [state] if isinstance(state, str) else state
        cursor = None
        while True:
            page = self._http.json_call("GET", "/v1/jobs", safe=True, query={
                "state": ",".join(states) if states else None, "label": _labels(label),
                "name": name, "array": array, "limit": page_size, "cursor": cursor})
            for data in page.get("jobs", []):
                yield Job(self, data)
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def wait(self, job_id: int, timeout: Optional[float] = None) -> Job:
        """``get(job_id).wait(timeout)`` in one call."""
        return self.job(job_id).wait(timeout)

    def cancel(self, job_id: int) -> Job:
        return self.job(job_id).cancel()

    # ------------------------------------------------------- pool and usage

    @operation("GET", "/v1/pool")
    def pool(self) -> Dict[str, Any]:
        """Hosts, cores, what runs where, health, utilization."""
        return self._http.json_call("GET", "/v1/pool", safe=True)

    @operation("GET", "/v1/usage")
    def usage(self, from_: Optional[str] = None, to: Optional[str] = None,
              group_by: Optional[str] = None, label: Optional[str] = None,
              tenant: Optional[str] = None, csv: bool = False) -> Union[Dict[str, Any], str]:
        """TPU core-seconds held in a window (``from_``/``to``: a UTC time or an
        age such as "24h"), grouped by ``tenant`` or ``label``. ``csv=True``
        returns the CSV text instead of the JSON."""
        query = {"from": from_, "to": to, "group_by": group_by, "label": label,
                 "tenant": tenant}
        if csv:
            query["format"] = "csv"
            return self._http.call("GET", "/v1/usage", query=query, safe=True,
                                   headers={"Accept": "text/csv"}).text()
        return self._http.json_call("GET", "/v1/usage", query=query, safe=True)

    def _host_action(self, template: str, host: str) -> Dict[str, Any]:
        # Idempotent: the host ends in the same health however often it is sent.
        return self._http.json_call("POST", template, path_params={"host": host}, safe=True)

    @operation("POST", "/v1/pool/hosts/{host}:drain")
    def drain_host(self, host: str) -> Dict[str, Any]:
        """Admin: no new jobs on the host; running ones finish."""
        return self._host_action("/v1/pool/hosts/{host}:drain", host)

    @operation("POST", "/v1/pool/hosts/{host}:fail")
    def fail_host(self, host: str) -> Dict[str, Any]:
        """Admin: the host is dead; its jobs are requeued or failed."""
        return self._host_action("/v1/pool/hosts/{host}:fail", host)

    @operation("POST", "/v1/pool/hosts/{host}:recover")
    def recover_host(self, host: str) -> Dict[str, Any]:
        """Admin: the host is healthy again."""
        return self._host_action("/v1/pool/hosts/{host}:recover", host)

    @operation("POST", "/v1/pool/leases/{id}:release")
    def release_lease(self, job_id: int) -> Dict[str, Any]:
        """Admin: force-release the cores a job holds (a stale holder)."""
        return self._http.json_call("POST", "/v1/pool/leases/{id}:release",
                                    path_params={"id": job_id})

    @operation("POST", "/v1/tenants/{tenant}/quota")
    def set_quota(self, tenant: str, max_cores: Optional[int]) -> Dict[str, Any]:
        """Admin: at most ``max_cores`` TPU cores at once for the tenant (None: no limit)."""
        return self._http.json_call("POST", "/v1/tenants/{tenant}/quota",
                                    {"max_cores": max_cores}, path_params={"tenant": tenant},
                                    safe=True)

    @operation("GET", "/v1/tenants/{tenant}/limits")
    def limits(self, tenant: str) -> Dict[str, Any]:
        """The tenant's limits in effect (its own, else the service's defaults):
        ``max_queued``, ``submits_per_second``, ``submit_burst``,
        ``requests_per_second``, ``request_burst``, ``max_array_size``."""
        return self._http.json_call("GET", "/v1/tenants/{tenant}/limits", None,
                                    path_params={"tenant": tenant}, safe=True)

    @operation("POST", "/v1/tenants/{tenant}/limits")
    def set_limits(self, tenant: str, **limits: Optional[float]) -> Dict[str, Any]:
        """Admin: sets some of the tenant's limits (``max_queued=100``; None gives one
        back to the service's default); returns the limits now in effect. Over a
        limit, requests are answered 429 with Retry-After."""
        return self._http.json_call("POST", "/v1/tenants/{tenant}/limits", dict(limits),
                                    path_params={"tenant": tenant}, safe=True)

    # ------------------------------------------------------------- datasets

    @operation("POST", "/v1/datasets")
    def upload_dataset(self, path: Union[str, "os.PathLike[str]"], name: Optional[str] = None,
                       idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """Uploads a CSV file (last column: the label); returns ``{id, name, rows,
        features, classes, columns}``. A spec trains on it with
        ``data={"dataset": {"upload": id}}``."""
        path = os.fspath(path)
        with open(path, "rb") as f:
            body = f.read()
        if name is None:
            name = os.path.splitext(os.path.basename(path))[0] or "upload"
        key = idempotency_key or "py-" + uuid.uuid4().hex
        return self._http.call("POST", "/v1/datasets", query={"name": name}, body=body,
                               content_type="text/csv", headers={"Idempotency-Key": key},
                               safe=True, expect=(200, 201)).json()

    # --------------------------------------------------------- script check

    @operation("POST", "/v1/checks")
    def check(self, paths: Iterable[Union[str, "os.PathLike[str]"]],
              accelerator_type: Optional[str] = None, lightning: Optional[str] = None,
              requirements: Iterable[Union[str, "os.PathLike[str]"]] = (),
              python: Optional[str] = None,
              runtime: Optional[str] = None) -> List[Dict[str, Any]]:
        """The script check of ``tpujobs check`` on the service: sends the text of
        each Python file (directories are searched for ``*.py``) and of each
        requirements file, and returns the findings, each ``{path, line, column,
        rule, severity, message, hint}``. The options are those of ``tpujobs
        check``: ``--accelerator-type``, ``--lightning``, ``--requirements``
        (their text is sent), ``--python``, ``--runtime`` (``"pjrt"`` or ``"xrt"``;
        sent only when given). ``CheckUnavailable`` when the service
        has no ``POST /v1/checks``."""
        body: Dict[str, Any] = {
            "files": [_read_text(p) for p in _python_files(paths)],
            "requirements": [_read_text(os.fspath(p)) for p in requirements]}
        if accelerator_type:
            body["accelerator_type"] = accelerator_type
        if lightning:
            body["lightning"] = lightning
        if python:
            body["python"] = python
        if runtime:
            body["runtime"] = runtime
        try:
            answer = self._http.json_call("POST", "/v1/checks", body, safe=True)
        except NotFound as e:
            raise CheckUnavailable(
                "%s has no script check (POST /v1/checks answered 404): it is older than the "
                "check; run `tpujobs check` locally instead (it needs no server)" % self.url,
                e.status, e.problem, e.headers, e.method, e.path) from None
        return answer["findings"]

    # -------------------------------------------------------- notifications

    @operation("GET", "/v1/notifications/secret")
    def notification_secret(self) -> Dict[str, Any]:
        """Whether the tenant has a signing secret, and since when (never the secret)."""
        return self._http.json_call("GET", "/v1/notifications/secret", safe=True)

    @operation("POST", "/v1/notifications/secret")
    def rotate_notification_secret(self) -> Dict[str, Any]:
        """Makes a new signing secret for the tenant and returns it, this once."""
        return self._http.json_call("POST", "/v1/notifications/secret", expect=(201,))

    @operation("GET", "/v1/notifications/allowlist")
    def notification_allowlist(self) -> List[str]:
        """The hosts, host:ports and URL prefixes notifications may be sent to."""
        return self._http.json_call("GET", "/v1/notifications/allowlist", safe=True)["entries"]

    @operation("PUT", "/v1/notifications/allowlist")
    def set_notification_allowlist(self, entries: Sequence[str]) -> List[str]:
        """Admin: replaces the allow-list."""
        return self._http.json_call("PUT", "/v1/notifications/allowlist",
                                    {"entries": list(entries)}, safe=True)["entries"]

    def notifications(self, job_id: int) -> List[Dict[str, Any]]:
        return self.job(job_id).notifications()

    # -------------------------------------------------------------- service

    @operation("GET", "/healthz")
    def health(self) -> Dict[str, Any]:
        """Liveness: the process answers."""
        return self._http.json_call("GET", "/healthz", safe=True)

    @operation("GET", "/readyz")
    def ready(self) -> bool:
        """Readiness: True when the service can serve (its database answers)."""
        response = self._http.call("GET", "/readyz", expect=(200, 503))
        return response.status == 200

    @operation("GET", "/metrics")
    def prometheus_metrics(self) -> str:
        """The Prometheus text exposition of the service's counters."""
        return self._http.call("GET", "/metrics", safe=True,
                               headers={"Accept": "text/plain"}).text()

    @operation("GET", "/openapi.json")
    def openapi(self) -> Dict[str, Any]:
        """The API document the service serves."""
        return self._http.json_call("GET", "/openapi.json", safe=True)


def dumps(value: Any) -> str:
    """JSON text of a spec or answer, as the service would print it."""
    return json.dumps(value, indent=2, sort_keys=True)
