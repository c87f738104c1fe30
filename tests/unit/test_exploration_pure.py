"""Pure-layer tests of count-based exploration: hashes, counters, bonus, AE, spec."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from rllib_privacy.errors import PrivacyConfigError
from rllib_privacy.exploration import (
    BASS,
    PAPER_PRIMES,
    AutoencoderHash,
    BoxNormalizer,
    CountBasedExploration,
    CountMinSketch,
    ExactCounter,
    ExplorationSpec,
    KeyFunctionHash,
    ObservationInfo,
    OneHot,
    SimHash,
    code_keys,
    count_bonus,
    ram_grid_key,
)


def _reference_counts(rows: list[np.ndarray]) -> list[np.ndarray]:
    """Counts with collections.Counter: all of a batch first, then its counts."""
    table: Counter[bytes] = Counter()
    out = []
    for batch in rows:
        table.update(bytes(r.tobytes()) for r in batch)
        out.append(np.array([table[bytes(r.tobytes())] for r in batch]))
    return out


# ------------------------------------------------------------------ SimHash


def test_simhash_codes_equal_sign_of_fixed_projection() -> None:
    hasher = SimHash(3, 16, seed=7)
    a = np.random.default_rng(7).standard_normal((16, 3))  # A ~ N(0,1) from the same seed
    np.testing.assert_array_equal(hasher.projection, a)
    states = np.random.default_rng(1).normal(size=(50, 3))
    expected = np.sign(states @ a.T)
    codes = hasher.codes(states)
    assert codes.dtype == np.int8 and codes.shape == (50, 16)
    np.testing.assert_array_equal(codes, expected)


def test_simhash_float32_projection_keeps_float64_signs_next_to_hyperplanes() -> None:
    # States a hair off the hyperplanes of A_0 (distance ~1e-9 of the norm, far below
    # float32 round-off): the float32 projection alone would get many of these signs
    # wrong; the recomputed entries must give exactly the float64 codes.
    hasher = SimHash(128, 256, seed=3)
    rng = np.random.default_rng(5)
    states = rng.uniform(-1.0, 1.0, size=(2000, 128))
    a0 = hasher.projection[0]
    states[:1000] -= np.outer(states[:1000] @ a0 / (a0 @ a0), a0) * (1.0 - 1e-9)
    expected = np.where(states @ hasher.projection.T >= 0, 1, -1)
    float32_only = np.where(
        states.astype(np.float32) @ hasher.projection.astype(np.float32).T >= 0, 1, -1
    )
    assert np.any(float32_only[:1000, 0] != expected[:1000, 0])  # the test has teeth
    np.testing.assert_array_equal(hasher.codes(states), expected)
    np.testing.assert_array_equal(
        hasher.codes(states.astype(np.float32)),
        hasher.codes(states.astype(np.float32).astype(np.float64)),
    )


def test_simhash_maps_exact_zero_to_plus_one_and_uses_preprocessor() -> None:
    hasher = SimHash(3, 8, seed=0)
    np.testing.assert_array_equal(hasher.codes(np.zeros((2, 3))), np.ones((2, 8)))
    box = BoxNormalizer([-1.2, -0.07], [0.6, 0.07])
    hashed = SimHash(box.output_dim, 8, seed=0, preprocessor=box)
    states = np.array([[-1.2, -0.07], [0.6, 0.07]])
    g = np.array([[-1.0, -1.0, 1.0], [1.0, 1.0, 1.0]])
    np.testing.assert_array_equal(
        hashed.codes(states), np.where(g @ hashed.projection.T >= 0, 1, -1)
    )
    with pytest.raises(ValueError, match="input_dim=3"):
        hasher.codes(np.zeros((1, 4)))


def test_simhash_similar_states_collide_more_than_distant_ones() -> None:
    """Each bit differs with probability angle/π (Charikar 2002)."""
    k = 256
    hasher = SimHash(8, k, seed=3)
    rng = np.random.default_rng(4)
    base = rng.normal(size=(400, 8))
    for angle in (0.05, 1.0):
        # Rotate each base vector by `angle` within a random plane through it.
        ortho = rng.normal(size=base.shape)
        ortho -= (np.sum(ortho * base, 1) / np.sum(base * base, 1))[:, None] * base
        ortho *= (np.linalg.norm(base, axis=1) / np.linalg.norm(ortho, axis=1))[:, None]
        other = math.cos(angle) * base + math.sin(angle) * ortho
        mismatch = np.mean(hasher.codes(base) != hasher.codes(other))
        p = angle / math.pi
        # Bits come from k independent rows of A: ≤ 4 standard errors over k rows.
        assert abs(mismatch - p) <= 4 * math.sqrt(p * (1 - p) / k), (angle, mismatch, p)
    near = np.mean(np.all(hasher.codes(base) == hasher.codes(base + 1e-6), axis=1))
    far = np.mean(np.all(hasher.codes(base) == hasher.codes(-base), axis=1))
    assert near > 0.9 and far == 0.0


def test_simhash_state_dict_round_trip() -> None:
    hasher = SimHash(4, 8, seed=1)
    other = SimHash(4, 8, seed=2)
    other.load_state_dict(hasher.state_dict())
    x = np.random.default_rng(0).normal(size=(20, 4))
    np.testing.assert_array_equal(other.codes(x), hasher.codes(x))
    with pytest.raises(ValueError, match="projection"):
        SimHash(5, 8, seed=0).load_state_dict(hasher.state_dict())


def test_one_hot_preprocessor_accepts_indices_and_one_hot_rows() -> None:
    g = OneHot(4)
    np.testing.assert_array_equal(g(np.array([2, 0])), np.eye(4)[[2, 0]])
    np.testing.assert_array_equal(g(np.eye(4)[[1]]), np.eye(4)[[1]])
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        g(np.array([4]))


# ------------------------------------------------------------------ counters


def _random_code_batches(rng: np.random.Generator, k: int, distinct: int, sizes: list[int]):
    pool = np.where(rng.random((distinct, k)) < 0.5, 1, -1).astype(np.int8)
    return [pool[rng.integers(0, distinct, size=n)] for n in sizes]


@pytest.mark.parametrize("k", [16, 64, 100])
def test_exact_counter_matches_reference_dict(k: int) -> None:
    rng = np.random.default_rng(k)
    batches = _random_code_batches(rng, k, distinct=300, sizes=[500, 1, 800, 0, 250])
    counter = ExactCounter()
    for batch, expected in zip(batches, _reference_counts(batches), strict=True):
        np.testing.assert_array_equal(counter.increment_and_count(batch), expected)
    assert counter.total == sum(len(b) for b in batches)
    assert counter.num_unique == len({bytes(r.tobytes()) for b in batches for r in b})


def test_counters_count_the_whole_batch_before_returning() -> None:
    codes = np.array([[1, -1], [1, -1], [-1, 1]], dtype=np.int8)
    for counter in (ExactCounter(), CountMinSketch()):
        np.testing.assert_array_equal(counter.increment_and_count(codes), [2, 2, 1])
        np.testing.assert_array_equal(counter.increment_and_count(codes[:1]), [3])


def test_state_action_counting_separates_actions() -> None:
    codes = np.ones((4, 8), dtype=np.int8)
    actions = np.array([0, 1, 1, 0])
    for counter in (ExactCounter(), CountMinSketch()):
        np.testing.assert_array_equal(counter.increment_and_count(codes, actions), [2, 2, 2, 2])
    with pytest.raises(ValueError, match="actions"):
        code_keys(codes, np.array([0.5, 1, 1, 0]))


def test_count_min_never_under_counts_and_over_counts_with_tiny_tables() -> None:
    rng = np.random.default_rng(0)
    batches = _random_code_batches(rng, 32, distinct=500, sizes=[400, 400, 400])
    exact, sketch = ExactCounter(), CountMinSketch(primes=(13, 17))
    over = 0
    for batch in batches:
        e, s = exact.increment_and_count(batch), sketch.increment_and_count(batch)
        assert np.all(s >= e)
        over += int(np.sum(s > e))
    assert over > 0  # 500 codes in tables of 13 and 17 entries must collide


def test_count_min_equals_exact_without_collisions() -> None:
    rng = np.random.default_rng(1)
    batches = _random_code_batches(rng, 64, distinct=200, sizes=[1000, 1000])
    sketch = CountMinSketch()
    assert sketch.primes == PAPER_PRIMES == (999931, 999953, 999959, 999961, 999979, 999983)
    distinct = np.unique(np.concatenate(batches), axis=0)
    index = sketch.table_indices(distinct)
    # No collision: in every table the 200 codes land on distinct entries.
    assert all(len(np.unique(index[:, j])) == len(distinct) for j in range(index.shape[1]))
    exact = ExactCounter()
    for batch in batches:
        np.testing.assert_array_equal(
            sketch.increment_and_count(batch), exact.increment_and_count(batch)
        )


@pytest.mark.parametrize(
    "num_bits",
    [
        40,
        256,
        # 2,200 key bytes × p = 999,983 overflows int32: the byte sums fall back to int64.
        8 * 2200,
    ],
)
def test_count_min_hash_is_the_papers_formula(num_bits: int) -> None:
    codes = np.where(np.random.default_rng(2).random((5, num_bits)) < 0.5, 1, -1).astype(np.int8)
    sketch = CountMinSketch(primes=(101, 999983))
    bits = np.unpackbits(code_keys(codes), axis=1)
    index = sketch.table_indices(codes)
    for j, p in enumerate(sketch.primes):
        expected = [sum(pow(2, int(i), p) for i in np.flatnonzero(row)) % p for row in bits]
        np.testing.assert_array_equal(index[:, j] - sketch._offsets[j], expected)
    wide = num_bits // 8 * 999983 >= 2**31
    assert sketch._byte_weights.dtype == (np.int64 if wide else np.int32)


def test_counter_state_dicts_round_trip() -> None:
    rng = np.random.default_rng(3)
    first, second = _random_code_batches(rng, 72, distinct=50, sizes=[300, 300])
    for cls in (ExactCounter, CountMinSketch):
        counter = cls()
        counter.increment_and_count(first)
        restored = cls.from_state_dict(counter.state_dict())
        np.testing.assert_array_equal(
            restored.increment_and_count(second), counter.increment_and_count(second)
        )
        assert restored.total == counter.total == 600
    with pytest.raises(ValueError, match="kind"):
        ExactCounter().load_state_dict(CountMinSketch().state_dict())
    with pytest.raises(ValueError, match="primes"):
        CountMinSketch(primes=(7, 11)).load_state_dict(CountMinSketch().state_dict())


def test_counters_reject_bad_codes() -> None:
    with pytest.raises(ValueError, match="SimHash codes"):
        ExactCounter().increment_and_count(np.zeros((2, 3), dtype=np.int8))
    with pytest.raises(ValueError, match="2-D integer"):
        CountMinSketch().increment_and_count(np.ones((2, 3)))
    counter = ExactCounter()
    counter.increment_and_count(np.ones((1, 8), dtype=np.int8))
    with pytest.raises(ValueError, match="key bytes"):
        counter.increment_and_count(np.ones((1, 16), dtype=np.int8))
    with pytest.raises(ValueError, match="distinct"):
        CountMinSketch(primes=(7, 7))


# ------------------------------------------------------------------ bonus


@pytest.mark.parametrize("kind", ["inverse_sqrt", "inverse", "inverse_log"])
def test_bonus_is_strictly_decreasing_in_the_count(kind: str) -> None:
    n = np.arange(1, 10_000)
    bonus = count_bonus(n, 0.5, kind)
    assert np.all(np.diff(bonus) < 0) and np.all(bonus > 0)


def test_bonus_values_and_errors() -> None:
    np.testing.assert_allclose(count_bonus([1, 4, 100], 0.01), [0.01, 0.005, 0.001])
    np.testing.assert_allclose(count_bonus([1, 4], 2.0, "inverse"), [2.0, 0.5])
    np.testing.assert_allclose(count_bonus([1], 1.0, "inverse_log"), [1 / math.log(2)])
    with pytest.raises(ValueError, match="beta"):
        count_bonus([1], 0.0)
    with pytest.raises(ValueError, match="kind"):
        count_bonus([1], 1.0, "sqrt")
    with pytest.raises(ValueError, match="counts"):
        count_bonus([0], 1.0)


# ------------------------------------------------------------------ BASS, key function


def test_bass_matches_cell_sums() -> None:
    frames = np.random.default_rng(0).integers(0, 256, size=(3, 45, 30, 3))
    bass = BASS((45, 30, 3), cell_size=20, bins=20)
    features = bass(frames)
    assert features.shape == (3, bass.output_dim) == (3, 3 * 2 * 3)
    cells = features.reshape(3, 3, 2, 3)
    for i in range(3):
        for j in range(2):
            block = frames[:, 20 * i : 20 * i + 20, 20 * j : 20 * j + 20].sum(axis=(1, 2))
            np.testing.assert_array_equal(cells[:, i, j], np.floor(20 / (255 * 400) * block))
    full = np.full((1, 40, 40), 255)
    assert np.all(BASS((40, 40), cell_size=20, bins=20)(full) == 20)


def test_key_function_hash_from_import_path() -> None:
    ram = np.zeros((3, 128), dtype=np.uint8)
    ram[:, 42] = [10, 17, 200]
    ram[:, 3] = [1, 1, 2]
    hasher = KeyFunctionHash(
        "rllib_privacy.exploration.key_function:ram_grid_key", indices=[3, 42], grid=[1, 8]
    )
    np.testing.assert_array_equal(hasher.codes(ram), [[1, 1], [1, 2], [2, 25]])
    counts = ExactCounter().increment_and_count(hasher.codes(np.repeat(ram[:1], 4, axis=0)))
    np.testing.assert_array_equal(counts, [4, 4, 4, 4])
    with pytest.raises(ValueError, match="indices"):
        ram_grid_key(ram, indices=[128])
    with pytest.raises(ValueError, match="module:function"):
        KeyFunctionHash("no_colon")


# ------------------------------------------------------------------ autoencoder


def test_autoencoder_codes_become_stable_after_training() -> None:
    rng = np.random.default_rng(0)
    states = rng.uniform(-1, 1, size=(64, 8))
    ae = AutoencoderHash(
        8,
        16,
        seed=0,
        code_bits=32,
        hidden=(64,),
        train_steps=150,
        batch_size=64,
        lr=3e-3,
        probe_size=64,
    )
    ae.observe(states)
    flips = [ae.train()["bit_flip_rate"] for _ in range(6)]
    assert flips[0] == 0.0
    # Early retrainings move many bits; the λ term saturates the code so that late ones don't.
    assert max(flips[1:3]) > flips[-1] and flips[-1] <= 0.02, flips
    binary = ae.binary_codes(states)
    assert binary.shape == (64, 32) and set(np.unique(binary)) <= {0, 1}
    assert len({r.tobytes() for r in binary}) >= 32  # not collapsed onto a few codes
    codes = ae.codes(states)
    assert codes.shape == (64, 16) and set(np.unique(codes)) <= {-1, 1}


def test_autoencoder_loss_has_the_lambda_term_and_state_round_trips() -> None:
    import torch

    ae = AutoencoderHash(4, 8, seed=1, code_bits=8, hidden=(16,), lam=10.0, noise=0.0)
    x = torch.zeros((5, 4))
    total, recon, binar = ae.loss(x)
    b = torch.sigmoid(ae.model.encoder(x))
    expected = (10.0 / 8) * torch.minimum((1 - b) ** 2, b**2).sum(1).mean()
    torch.testing.assert_close(binar, expected)
    torch.testing.assert_close(total, recon + binar)
    ae.observe(np.random.default_rng(0).normal(size=(30, 4)))
    ae.train()
    clone = AutoencoderHash(4, 8, seed=2, code_bits=8, hidden=(16,))
    clone.load_state_dict(ae.state_dict())
    probe = np.random.default_rng(5).normal(size=(10, 4))
    np.testing.assert_array_equal(clone.codes(probe), ae.codes(probe))
    with pytest.raises(ValueError, match="empty"):
        AutoencoderHash(4, 8, seed=0).train()


# ------------------------------------------------------------------ spec


def test_spec_rejects_unknown_keys_and_bad_values_naming_the_key() -> None:
    with pytest.raises(PrivacyConfigError, match=r"'num_bit'.*did you mean 'num_bits'"):
        ExplorationSpec.from_dict({"num_bit": 32})
    with pytest.raises(PrivacyConfigError, match=r"count_exploration_config\.beta"):
        ExplorationSpec.from_dict({"beta": -1})
    with pytest.raises(PrivacyConfigError, match=r"count_exploration_config\.counter"):
        ExplorationSpec.from_dict({"counter": "bloom"})
    with pytest.raises(PrivacyConfigError, match=r"count_exploration_config\.key_function"):
        ExplorationSpec.from_dict({"hash": "key_function"})
    with pytest.raises(PrivacyConfigError, match=r"count_exploration_config\.primes"):
        ExplorationSpec.from_dict({"primes": [7, 7]})
    assert ExplorationSpec.from_dict(None) == ExplorationSpec()


def test_count_based_exploration_counts_then_pays_the_bonus() -> None:
    info = ObservationInfo(shape=(2,), low=np.array([-1.2, -0.07]), high=np.array([0.6, 0.07]))
    spec = ExplorationSpec.from_dict({"num_bits": 16, "beta": 0.5, "counter": "count_min"})
    exploration = CountBasedExploration(spec, info)
    states = np.array([[-0.5, 0.0], [-0.5, 0.0], [0.5, 0.06]])
    bonus, counts = exploration.increment_and_bonus(states)
    np.testing.assert_array_equal(counts, [2, 2, 1])
    np.testing.assert_allclose(bonus, 0.5 / np.sqrt([2, 2, 1]))
    restored = CountBasedExploration(spec, info)
    restored.load_state_dict(exploration.state_dict())
    np.testing.assert_array_equal(restored.increment_and_bonus(states[:1])[1], [3])


def test_conv_autoencoder_hashes_frames() -> None:
    frames = np.random.default_rng(0).integers(0, 256, size=(6, 60, 40, 3))
    ae = AutoencoderHash(
        1, 16, seed=0, architecture="conv", code_bits=24, train_steps=2, batch_size=4
    )
    ae.observe(frames)
    metrics = ae.train()
    assert metrics["reconstruction_loss"] > 0 and metrics["bit_flip_rate"] == 0.0
    codes = ae.codes(frames)
    assert codes.shape == (6, 16) and set(np.unique(codes)) <= {-1, 1}
    np.testing.assert_array_equal(ae.codes(frames), codes)  # deterministic at inference
