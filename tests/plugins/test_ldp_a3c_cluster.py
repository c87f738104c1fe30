"""LDPA3C beyond one machine: a two-node Ray cluster that loses the node of one EnvRunner.

``ray.cluster_utils.Cluster`` starts two Ray nodes on this machine. The driver (the
aggregator: its learner, ledger and journal) is on the head node; the two EnvRunners are
forced onto different nodes by CPUs (each asks for one, each node has one). Removing the
worker node kills one EnvRunner with its in-flight request; the run goes on with the other,
a node added back gets the dead runner restarted (``restart_failed_env_runners``), and the
ledger, the journal and the fault counters agree: every accepted submission counted once.

The cluster is the suite's own: its address file goes into the session's private
``RAY_TMPDIR`` (tests/conftest.py), never into the machine-wide ``/tmp/ray/ray_current_cluster``
that a user's ``ray.init()`` (or ``rllib train`` without ``--ray-address``) would join.
"""

from __future__ import annotations

import collections
import os
import pathlib
import time
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import MACHINE_RAY_ADDRESS_FILE

from rllib_privacy.accounting import PrivacyJournal, journal_file
from rllib_privacy.algorithms.ldp_a3c import LDPA3C, LDPA3CConfig
from rllib_privacy.algorithms.ldp_a3c.ldp_a3c import JOURNAL_COMPONENT

MAX_BUFFER = 4
SUBMISSIONS_PER_ITERATION = 8
#: Bound of every wait on the cluster (node death noticed, runner restarted).
WAIT_S = 60.0


def _machine_address_file() -> str | None:
    """What the machine-wide cluster address file says (None: there is none)."""
    try:
        return MACHINE_RAY_ADDRESS_FILE.read_text()
    except FileNotFoundError:
        return None


@pytest.fixture
def machine_address_before() -> str | None:
    """The machine-wide cluster address file before the test's cluster starts."""
    return _machine_address_file()


@pytest.fixture
def two_node_cluster(machine_address_before: str | None) -> Iterator[Any]:
    """A head node (the driver's) and one worker node, 1 CPU each; shut down even on failure.

    The conftest's session Ray (``ray_session``), if another test started it, is shut down
    first and started again afterwards with its own settings: one driver joins one cluster.
    """
    import ray
    from ray.cluster_utils import Cluster

    import rllib_privacy

    # Ray writes the head's address to <RAY_TMPDIR>/ray/ray_current_cluster: the conftest's
    # private RAY_TMPDIR keeps it from the machine-wide file other processes read.
    assert os.environ.get("RAY_TMPDIR"), "tests/conftest.py sets a private RAY_TMPDIR"
    session_ray_was_up = ray.is_initialized()
    if session_ray_was_up:
        ray.shutdown()
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "include_dashboard": False},
    )
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        rllib_privacy.register()  # into this cluster's Tune registry
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
        if session_ray_was_up:
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        # Tune's registry lives in the Ray session: register ours in the new one again.
        rllib_privacy.register()


@pytest.mark.ray
def test_the_cluster_never_writes_the_machine_wide_address_file(
    machine_address_before: str | None, two_node_cluster: Any
) -> None:
    from ray._common.utils import get_ray_address_file

    # The cluster announced itself in the private temp folder only ...
    private_file = pathlib.Path(get_ray_address_file(None))
    assert private_file != MACHINE_RAY_ADDRESS_FILE
    assert private_file.read_text() == two_node_cluster.address
    # ... while it is up, a process without RAY_TMPDIR finds what it found before (usually
    # no file at all), never this cluster.
    assert _machine_address_file() == machine_address_before
    assert two_node_cluster.address not in (machine_address_before or "")


def _runner_nodes(algo: LDPA3C) -> dict[int, str]:
    """Node id of each healthy remote EnvRunner, by worker index."""
    import ray

    pairs = algo.env_runner_group.foreach_env_runner(
        lambda runner: (runner.worker_index, ray.get_runtime_context().get_node_id()),
        local_env_runner=False,
    )
    return dict(pairs)


def _train_until(algo: LDPA3C, done: Any, what: str, results: list[dict[str, Any]]) -> None:
    """Trains until ``done(algo)`` (at least once), failing after WAIT_S seconds."""
    deadline = time.monotonic() + WAIT_S
    while True:
        results.append(algo.train())
        if done(algo):
            return
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {WAIT_S:.0f} s ({len(results)} iterations)")


@pytest.mark.ray
@pytest.mark.parametrize(
    "agents_per_env_runner, submissions_per_request",
    # One agent at a time, one release per request; a fleet of 8 agents per runner whose
    # requests carry 8 releases each (a lost request loses all 8).
    [(1, 1), (8, 8)],
    ids=["one-agent", "fleet-of-8"],
)
@pytest.mark.slow
def test_run_survives_losing_a_node_and_counts_every_submission_once(
    two_node_cluster: Any,
    tmp_path: pathlib.Path,
    agents_per_env_runner: int,
    submissions_per_request: int,
) -> None:
    cluster = two_node_cluster
    head_id = cluster.head_node.node_id
    journal_dir = tmp_path / "journal"
    config = (
        LDPA3CConfig()
        # 1 CPU per runner and 1 CPU per node: one runner on each node.
        .env_runners(num_env_runners=2, num_cpus_per_env_runner=1)
        .fault_tolerance(
            restart_failed_env_runners=True,
            # Each iteration pings a runner that waits for a node; keep that short.
            env_runner_health_probe_timeout_s=1.0,
        )
        .training(
            mechanism="laplace",
            epsilon=1.0,
            max_buffer=MAX_BUFFER,
            submissions_per_iteration=SUBMISSIONS_PER_ITERATION,
            agents_per_env_runner=agents_per_env_runner,
            submissions_per_request=submissions_per_request,
            eval_episodes=0,
            privacy_journal_dir=str(journal_dir),
        )
        # Public scores: one release per submission, which the counts below compare.
        .privacy(privacy_score_mechanism="public")
    )
    algo = config.build_algo()
    try:
        nodes = _runner_nodes(algo)
        assert sorted(nodes) == [1, 2] and len(set(nodes.values())) == 2, nodes
        # The aggregator is the driver: on the head node, never removed.
        (lost_index,) = [i for i, node in nodes.items() if node != head_id]
        (kept_index,) = [i for i, node in nodes.items() if node == head_id]
        # Both nodes' runners submit (a runner's first call builds its learner: slow).
        results = [algo.train() for _ in range(2)]
        _train_until(
            algo,
            lambda a: min(_accepted_from(a, i) for i in nodes) >= 1,
            "the runners did not both submit",
            results,
        )
        before = results[-1]["submissions"]

        worker = next(iter(cluster.worker_nodes))
        cluster.remove_node(worker)
        # The run goes on with the head's runner; RLlib marks the dead one unhealthy.
        _train_until(
            algo,
            lambda a: a.env_runner_group.num_healthy_remote_workers() == 1,
            "the runner on the removed node was not marked unhealthy",
            results,
        )
        results += [algo.train() for _ in range(2)]
        during = results[-1]["submissions"]
        assert during >= before + 3 * SUBMISSIONS_PER_ITERATION

        # Nothing reaches the aggregator from the dead runner any more: what it sent so far.
        from_dead_runner = _accepted_from(algo, lost_index)

        # A new node: Ray restarts the dead runner there, RLlib's probe restores it.
        cluster.add_node(num_cpus=1)
        _train_until(
            algo,
            lambda a: a.env_runner_group.num_healthy_remote_workers() == 2,
            "the runner was not restored on the new node",
            results,
        )
        nodes_after = _runner_nodes(algo)
        assert nodes_after[kept_index] == head_id
        assert nodes_after[lost_index] not in (head_id, worker.node_id)
        # ... and it submits again (a new process: its release counter starts at 0).
        _train_until(
            algo,
            lambda a: _accepted_from(a, lost_index) > from_dead_runner,
            "the restored runner sent no submission",
            results,
        )
        results.append(algo.train())

        ldp, privacy = results[-1]["ldp"], results[-1]["privacy"]
        submissions = [r["submissions"] for r in results]
        assert submissions == sorted(set(submissions))  # every iteration made progress
        assert submissions[-1] >= SUBMISSIONS_PER_ITERATION * len(results)
        # Every accepted submission is counted once: ledger, scores, updates, journal.
        assert ldp["submissions"] == privacy["releases"] == ldp["applied_submissions"]
        assert ldp["submissions_dropped"] == 0 and ldp["duplicate_submissions"] == 0
        assert ldp["updates"] == ldp["applied_submissions"] // MAX_BUFFER
        assert ldp["buffer_size"] == ldp["applied_submissions"] % MAX_BUFFER
        # One runner died with at most one request in flight (one per runner).
        assert 0 <= ldp["lost_requests"] <= 1
        records = _submission_records(algo)
        ids = [r["id"] for r in records]
        assert len(ids) == len(set(ids)) == ldp["submissions"]
        releases = collections.Counter((r["agent_id"], r["agent_sequence"]) for r in records)
        assert set(releases.values()) == {1}
        # One release per local agent (submissions_per_agent 1): ε = 1 spent, never more.
        assert privacy["epsilon_spent"] == pytest.approx(1.0)
        assert set(algo._ledger.state_dict()["agents"]) == {r["agent_id"] for r in records}
        # What the runner that stayed up and the restarted one released reached the ledger,
        # bar what is still in flight.
        released = dict(
            algo.env_runner_group.foreach_env_runner(
                lambda runner: (runner.worker_index, runner._num_releases),
                local_env_runner=False,
            )
        )
        in_flight = algo._in_flight() * submissions_per_request
        accepted = _accepted_from(algo, kept_index)
        assert accepted <= released[kept_index] <= accepted + in_flight
        accepted = _accepted_from(algo, lost_index) - from_dead_runner
        assert accepted <= released[lost_index] <= accepted + in_flight
    finally:
        algo.stop()


def _submission_records(algo: LDPA3C) -> list[dict[str, Any]]:
    journal = PrivacyJournal(
        journal_file(algo.config.privacy_journal_dir, JOURNAL_COMPONENT),
        component=JOURNAL_COMPONENT,
    )
    # A release record keeps the agent's report under "event", the public scalars beside it.
    return [{**r, **r["event"]} for r in journal.records() if r["kind"] == "release"]


def _accepted_from(algo: LDPA3C, worker_index: int) -> int:
    """Journaled submissions of EnvRunner ``worker_index`` (agent ids ``<index>-<hex>-<n>``)."""
    prefix = f"{worker_index}-"
    return sum(1 for r in _submission_records(algo) if r["agent_id"].startswith(prefix))
