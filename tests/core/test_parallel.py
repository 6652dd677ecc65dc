"""The local runner: results in job order whatever order they finish in, every job reported
done once, and the bundle's parse through it the same as one process."""

from pathlib import Path

from goodput_agent.bundle import open_bundle
from goodput_agent.core.parallel import LocalRunner, biggest_first

CASE = Path(__file__).resolve().parents[2] / "evals" / "cases" / "c05-network-fault-ib-link-down"


def square(x: int) -> int:
    return x * x


def test_results_come_back_in_job_order_and_each_job_is_reported_once():
    done: list[int] = []
    jobs = [(n,) for n in range(7)]
    got = LocalRunner(2).map_files(square, jobs, sizes=[1, 9, 3, 7, 5, 2, 8], on_done=done.append)
    assert got == [n * n for n in range(7)]
    assert sorted(done) == list(range(7))


def test_biggest_jobs_start_first():
    assert biggest_first(4, [10, 40, 20, 30]) == [1, 3, 2, 0]
    assert biggest_first(3, None) == [0, 1, 2]


def test_a_bundle_parsed_on_two_processes_is_parsed_as_in_one():
    results = []
    for runner in (LocalRunner(1), LocalRunner(2)):
        with open_bundle(CASE, ("expected.json",)) as bundle:
            bundle.runner = runner
            parsed = bundle.parse_many(bundle.inventory.files)
            results.append([(f.rel_path, r.model_dump_json()) for f, r in parsed])
    assert results[0] and results[0] == results[1]
