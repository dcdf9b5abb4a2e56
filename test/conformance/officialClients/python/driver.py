"""Runs the shared contract cases (../cases.json) with the official Python client, unmodified
(vendored under ../vendor/python), sync or async, against a running service.

usage: driver.py sync|async BASE_ORIGIN API_KEY CASES_JSON
Prints one JSON object per case: {"case", "status": "pass"|"fail"|"n/a", "detail"}.
The only change to the client is the one a user makes: the service's key header instead of
x-dune-api-key (a subclass overriding default_headers), and the base URL."""

import asyncio
import importlib.metadata  # noqa: F401  the client's util.py uses importlib.metadata without importing it (an installed package gets it imported by its loader)
import io
import json
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "vendor" / "python"))

from dune_client.client import DuneClient  # noqa: E402
from dune_client.client_async import AsyncDuneClient  # noqa: E402
from dune_client.models import ExecutionState  # noqa: E402
from dune_client.query import QueryBase  # noqa: E402
from dune_client.types import QueryParameter  # noqa: E402

MODE, BASE, KEY, CASES = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
SPEC = json.loads(Path(CASES).read_text())
C = SPEC["constants"]


def service_headers(headers):
    headers = dict(headers)
    headers["X-Service-Api-Key"] = headers.pop("x-dune-api-key")
    return headers


class Sync(DuneClient):
    def default_headers(self):
        return service_headers(super().default_headers())


class Async(AsyncDuneClient):
    def default_headers(self):
        return service_headers(super().default_headers())


def check(cond, what):
    if not cond:
        raise AssertionError(what)


state = {}
TABLE = f"t_python_{MODE}"


def who(value):
    return [QueryParameter.text_type("who", value), QueryParameter.text_type("color", "red")]


def sync_cases(c):
    def create_query():
        q = c.create_query("official python", C["query_sql"], params=who(C["who_default"]))
        state["q"] = q.base.query_id
        check(q.base.query_id > 0, f"query_id {q.base.query_id}")

    def get_query():
        q = c.get_query(state["q"])
        check(q.base.name == "official python", q.base.name)
        check([p.key for p in q.base.parameters()] == ["who", "color"], str(q.base.parameters()))
        check(q.meta.is_archived is False and q.meta.is_unsaved is False and q.sql == C["query_sql"], "flags")

    def update_query():
        check(c.update_query(state["q"], name="renamed") == state["q"], "update answer")
        check(c.get_query(state["q"]).base.name == "renamed", "renamed")

    def archive_query():
        check(c.archive_query(state["q"]) is True, "archive")
        check(c.unarchive_query(state["q"]) is False, "unarchive")

    def private_query():
        c.make_private(state["q"])
        check(c.get_query(state["q"]).meta.is_private is True, "private")
        c.make_public(state["q"])
        check(c.get_query(state["q"]).meta.is_private is False, "public")

    def execute_query():
        r = c.execute_query(QueryBase(query_id=state["q"], params=who(C["who_value"])))
        check(r.state == ExecutionState.PENDING and len(r.execution_id) == 26, str(r))
        state["e"] = r.execution_id
        wait(lambda: c.get_execution_status(state["e"]))

    def execute_sql():
        r = c.execute_sql("SELECT 1 AS one")
        check(len(r.execution_id) == 26, r.execution_id)

    def execution_status():
        s = c.get_execution_status(state["e"])
        check(s.state == ExecutionState.COMPLETED, str(s.state))
        check(s.result_metadata.total_row_count == 5, str(s.result_metadata))

    def execution_results():
        r = c.get_execution_results(state["e"], limit=2, offset=1)
        check([row["i"] for row in r.get_rows()] == [1, 2], str(r.get_rows()))
        check(r.get_rows()[0]["who"] == C["who_value"], str(r.get_rows()[0]))

    def execution_results_csv():
        r = c.get_execution_results_csv(state["e"])
        lines = r.data.read().decode().splitlines()
        check(lines[0] == "i,who,color" and len(lines) == 6, str(lines))

    def latest_results():
        r = c.get_latest_result(state["q"])
        check(len(r.get_rows()) == 5, str(len(r.get_rows())))

    def latest_results_csv():
        r = c.download_csv(state["q"])
        check(len(r.data.read().decode().splitlines()) == 6, "csv lines")

    def cancel_execution():
        r = c.execute_sql(C["long_sql"])
        check(c.cancel_execution(r.execution_id) is True, "cancel")
        s = c.get_execution_status(r.execution_id)
        check(s.state == ExecutionState.CANCELLED, str(s.state))

    def run_query():
        r = c.run_query(QueryBase(query_id=state["q"], params=who(C["who_value"])), ping_frequency=0.05)
        check(len(r.get_rows()) == 5, "rows")

    def run_sql():
        r = c.run_sql("SELECT 2 AS two", ping_frequency=0.05)
        check(r.get_rows() == [{"two": 2}], str(r.get_rows()))

    def compressed_results():
        e = c.execute_sql(C["compressed_sql"]).execution_id
        wait(lambda: c.get_execution_status(e))
        rows = c.get_execution_results(e).get_rows()
        check(len(rows) == C["compressed_rows"] and sum(r["id"] for r in rows) == C["compressed_id_sum"], f"{len(rows)} rows")

    def upload_csv():
        r = c.upload_csv("official_python", "a,b\n1,2\n")
        check(r.table_name == f"service.{C['namespace']}.dataset_official_python", str(r))

    def usage():
        u = c.get_usage()
        check(len(u.billing_periods) == 1 and u.billing_periods[0].credits_included == 10000, str(u))

    def create_table():
        schema = [{"name": "id", "type": "integer", "nullable": False}, {"name": "name", "type": "varchar"}, {"name": "value", "type": "double", "nullable": True}]
        r = c.create_table(C["namespace"], TABLE, schema, description="by the python client")
        check(r.full_name == f"service.{C['namespace']}.{TABLE}" and r.example_query, str(r))
        state["example"] = r.example_query

    def insert_csv():
        r = c.insert_data(C["namespace"], TABLE, io.BytesIO(C["csv_rows"].encode()), "text/csv")
        check(r.rows_written == 2 and r.bytes_written == len(C["csv_rows"].encode()), str(r))

    def insert_ndjson():
        r = c.insert_data(C["namespace"], TABLE, io.BytesIO(C["ndjson_rows"].encode()), "application/x-ndjson")
        check(r.rows_written == 1, str(r))

    def query_uploaded():
        rows = c.run_sql(state["example"], ping_frequency=0.05).get_rows()
        check(sorted(r["id"] for r in rows) == [1, 2, 3] and any(r["value"] is None for r in rows), str(rows))

    def list_uploads():
        tables = [t for t in c.list_uploads().tables if t.full_name.endswith("." + TABLE)]
        check(len(tables) == 1 and int(tables[0].table_size_bytes) > 0, str(tables))

    def list_datasets():
        names = [d.full_name for d in c.list_datasets(type="uploaded_table").datasets]
        check(f"service.{C['namespace']}.{TABLE}" in names, str(names))

    def get_dataset():
        d = c.get_dataset(f"service.{C['namespace']}.{TABLE}")
        check([col.name for col in d.columns] == ["id", "name", "value"], str(d.columns))

    def clear_table():
        c.clear_table(C["namespace"], TABLE)
        check(c.run_sql(state["example"], ping_frequency=0.05).get_rows() == [], "rows after clear")

    def delete_table():
        c.delete_table(C["namespace"], TABLE)
        check(all(not t.full_name.endswith("." + TABLE) for t in c.list_uploads().tables), "listed after delete")

    return {k: v for k, v in locals().items() if callable(v) and k != "c"}


def wait(status):
    for _ in range(400):
        s = status()
        if s.state in ExecutionState.terminal_states():
            return s
        time.sleep(0.05)
    raise AssertionError("the execution did not finish")


ASYNC_NA = "the async client has no call for it (executions and results only)"


async def async_cases(c):
    async def await_done(e):
        for _ in range(400):
            s = await c.get_execution_status(e)
            if s.state in ExecutionState.terminal_states():
                return s
            await asyncio.sleep(0.05)
        raise AssertionError("the execution did not finish")

    # The async client cannot create a query: the sync client creates it first (setup, not a case).
    setup = Sync(api_key=KEY, base_url=BASE)
    state["q"] = setup.create_query("official python async", C["query_sql"], params=who(C["who_default"])).base.query_id

    async def execute_query():
        r = await c.execute_query(QueryBase(query_id=state["q"], params=who(C["who_value"])))
        check(r.state == ExecutionState.PENDING and len(r.execution_id) == 26, str(r))
        state["e"] = r.execution_id
        await await_done(state["e"])

    async def execution_status():
        s = await c.get_execution_status(state["e"])
        check(s.state == ExecutionState.COMPLETED and s.result_metadata.total_row_count == 5, str(s.state))

    async def execution_results():
        rows = (await c.get_execution_results(state["e"])).get_rows()
        check([row["i"] for row in rows] == [0, 1, 2, 3, 4] and rows[0]["who"] == C["who_value"], str(rows))

    async def execution_results_csv():
        lines = (await c.get_execution_results_csv(state["e"])).data.read().decode().splitlines()
        check(lines[0] == "i,who,color" and len(lines) == 6, str(lines))

    async def latest_results():
        check(len((await c.get_latest_result(state["q"])).get_rows()) == 5, "rows")

    async def cancel_execution():
        e = (await c.execute_query(QueryBase(query_id=state["q"], params=who(C["who_value"])))).execution_id
        long = setup.execute_sql(C["long_sql"]).execution_id
        await await_done(e)
        check(await c.cancel_execution(long) is True, "cancel")
        s = await c.get_execution_status(long)
        check(s.state == ExecutionState.CANCELLED, str(s.state))

    async def run_query():
        r = await c.run_query(QueryBase(query_id=state["q"], params=who(C["who_value"])), ping_frequency=0.05)
        check(len(r.get_rows()) == 5, "rows")

    async def compressed_results():
        e = setup.execute_sql(C["compressed_sql"]).execution_id
        await await_done(e)
        rows = (await c.get_execution_results(e)).get_rows()
        check(len(rows) == C["compressed_rows"] and sum(r["id"] for r in rows) == C["compressed_id_sum"], f"{len(rows)} rows")

    return {k: v for k, v in locals().items() if callable(v) and k not in ("await_done",)}


def report(case, status, detail=""):
    print(json.dumps({"case": case, "status": status, "detail": detail}), flush=True)


def run_sync():
    cases = sync_cases(Sync(api_key=KEY, base_url=BASE))
    for case in SPEC["cases"]:
        fn = cases.get(case["id"])
        if fn is None:
            report(case["id"], "n/a", "the client has no call for it")
            continue
        try:
            fn()
            report(case["id"], "pass")
        except Exception as err:  # noqa: BLE001
            report(case["id"], "fail", f"{type(err).__name__}: {err} | {traceback.format_exc(limit=3)[-600:]}")


async def run_async():
    async with Async(api_key=KEY, base_url=BASE) as c:
        cases = await async_cases(c)
        for case in SPEC["cases"]:
            fn = cases.get(case["id"])
            if fn is None:
                report(case["id"], "n/a", ASYNC_NA)
                continue
            try:
                await fn()
                report(case["id"], "pass")
            except Exception as err:  # noqa: BLE001
                report(case["id"], "fail", f"{type(err).__name__}: {err} | {traceback.format_exc(limit=3)[-600:]}")


if MODE == "sync":
    run_sync()
else:
    asyncio.run(run_async())
