"""Learned hash codes from an autoencoder's binary code layer (Tang et al. 2017 §2.3, Alg. 2).

The AE's code layer has K sigmoid units b(s); during training uniform noise U(−a, a) is
added to b(s) before decoding, so the decoder can only tell states apart if their codes
are far apart (saturated). The loss (paper eq. 3) is

    L = −(1/N) Σ_n [ log p(s_n) − (λ/K) Σ_i min((1 − b_i(s_n))², b_i(s_n)²) ],

the second term pushing unused units to 0 or 1 so that codes do not oscillate. The code of
a state is ⌊b(s)⌉ ∈ {0, 1}^K, downsampled to k bits with SimHash. The AE is retrained
every ``j_update`` iterations on states from a FIFO replay pool.

Deviation: log p(s) is a unit-variance Gaussian log-likelihood (−½‖s − ŝ‖² up to a
constant) of the preprocessed state, not the paper's 64-bin pixel-wise softmax; it keeps
the AE small enough to retrain on CPU during training.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from rllib_privacy._validation import check_finite_positive, check_int_in_range
from rllib_privacy.exploration.simhash import Preprocessor, SimHash, as_2d_float

__all__ = ["AE_ARCHITECTURES", "AutoencoderHash"]

AE_ARCHITECTURES: tuple[str, ...] = ("mlp", "conv")
#: Conv AE input side: frames are converted to grey and resized to 52×52 (paper §A.1).
_FRAME_SIDE = 52


class _MLPAutoencoder(nn.Module):
    def __init__(self, input_dim: int, code_bits: int, hidden: Sequence[int]) -> None:
        super().__init__()
        enc: list[nn.Module] = []
        last = input_dim
        for width in hidden:
            enc += [nn.Linear(last, width), nn.ReLU()]
            last = width
        self.encoder = nn.Sequential(*enc, nn.Linear(last, code_bits))
        dec: list[nn.Module] = []
        last = code_bits
        for width in reversed(hidden):
            dec += [nn.Linear(last, width), nn.ReLU()]
            last = width
        self.decoder = nn.Sequential(*dec, nn.Linear(last, input_dim))


class _ConvAutoencoder(nn.Module):
    """A small version of the paper's Figure 1 AE: 3 strided 6×6 convs, dense code, mirror."""

    def __init__(self, code_bits: int, channels: int = 32) -> None:
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Unflatten(1, (1, _FRAME_SIDE, _FRAME_SIDE)),
            nn.Conv2d(1, channels, 6, stride=2),
            nn.ReLU(),  # 24×24
            nn.Conv2d(channels, channels, 6, stride=2),
            nn.ReLU(),  # 10×10
            nn.Conv2d(channels, channels, 6, stride=2),
            nn.ReLU(),  # 3×3
            nn.Flatten(),
            nn.Linear(channels * 9, code_bits),
        )
        self.decoder = nn.Sequential(
            nn.Linear(code_bits, channels * 9),
            nn.ReLU(),
            nn.Unflatten(1, (channels, 3, 3)),
            nn.ConvTranspose2d(channels, channels, 6, stride=2),
            nn.ReLU(),  # 10×10
            nn.ConvTranspose2d(channels, channels, 6, stride=2),
            nn.ReLU(),  # 24×24
            nn.ConvTranspose2d(channels, 1, 6, stride=2),  # 52×52
            nn.Flatten(),
        )


def frames_to_grey52(frames: Any) -> np.ndarray:
    """(N, H, W[, Z]) frames in [0, 255] → (N, 52·52) grey levels in [−1, 1]."""
    x = torch.as_tensor(np.asarray(frames), dtype=torch.float32)
    if x.ndim == 4:
        x = x.mean(dim=-1)
    if x.ndim != 3:
        raise ValueError(f"frames must be (N, H, W) or (N, H, W, Z), got {tuple(x.shape)}")
    x = nn.functional.interpolate(x[:, None], size=(_FRAME_SIDE, _FRAME_SIDE), mode="area")
    return (x.reshape(x.shape[0], -1) / 127.5 - 1.0).numpy().astype(np.float64)


class AutoencoderHash:
    """Learned binary codes, SimHashed to ``num_bits`` (the paper's AE-SimHash).

    Args:
        input_dim: D of the preprocessed state (ignored for ``conv``: 52·52).
        num_bits: k, bits of the final (downsampled) code.
        seed: Seeds the AE initialization, its noise and batches, and the SimHash A.
        code_bits: K, sigmoid units of the code layer (paper: 512).
        noise: a of the U(−a, a) training noise (paper: 0.3).
        lam: λ of the binarization term (paper: 10).
        architecture: ``mlp`` for vector states, ``conv`` for image frames.
        hidden: MLP hidden widths (encoder; the decoder mirrors them).
        pool_size: Capacity of the FIFO replay pool of states.
        train_steps: Adam steps per ``train`` call.
        batch_size: States per step, drawn uniformly from the pool.
        lr: Adam step size.
        probe_size: The first ``probe_size`` observed states form the fixed set on which
            the bit-flip rate of each retraining is measured.
        preprocessor: Optional g applied before the AE (e.g. RAM bytes → [−1, 1]); the
            ``conv`` AE always converts frames to 52×52 grey levels.

    """

    def __init__(
        self,
        input_dim: int,
        num_bits: int,
        *,
        seed: int,
        code_bits: int = 512,
        noise: float = 0.3,
        lam: float = 10.0,
        architecture: str = "mlp",
        hidden: Sequence[int] = (256,),
        pool_size: int = 100_000,
        train_steps: int = 200,
        batch_size: int = 256,
        lr: float = 1e-3,
        probe_size: int = 256,
        preprocessor: Preprocessor | None = None,
    ) -> None:
        if architecture not in AE_ARCHITECTURES:
            raise ValueError(
                f"architecture must be one of {list(AE_ARCHITECTURES)}, got {architecture!r}"
            )
        self.architecture = architecture
        self.input_dim = (
            _FRAME_SIDE**2
            if architecture == "conv"
            else check_int_in_range("input_dim", input_dim, low=1)
        )
        self.code_bits = check_int_in_range("code_bits", code_bits, low=1)
        self.noise = float(noise)
        if not 0.0 <= self.noise < 1.0:
            raise ValueError(f"noise must be in [0, 1), got {noise!r}")
        self.lam = float(lam)
        if self.lam < 0:
            raise ValueError(f"lam must be >= 0, got {lam!r}")
        self.pool_size = check_int_in_range("pool_size", pool_size, low=1)
        self.train_steps = check_int_in_range("train_steps", train_steps, low=1)
        self.batch_size = check_int_in_range("batch_size", batch_size, low=1)
        self.lr = check_finite_positive("lr", lr)
        self.probe_size = check_int_in_range("probe_size", probe_size, low=1)
        self.preprocessor = preprocessor
        self.simhash = SimHash(self.code_bits, num_bits, seed=seed)
        self._generator = torch.Generator().manual_seed(seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.model = (
                _ConvAutoencoder(self.code_bits)
                if architecture == "conv"
                else _MLPAutoencoder(self.input_dim, self.code_bits, tuple(hidden))
            )
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.lr)
        self._pool = np.zeros((self.pool_size, self.input_dim), dtype=np.float32)
        self._pool_next = 0
        self._pool_len = 0
        self._probe = np.zeros((0, self.input_dim), dtype=np.float32)
        self.num_trainings = 0

    @property
    def num_bits(self) -> int:
        """k, bits of the final code."""
        return self.simhash.num_bits

    def _inputs(self, batch: Any) -> np.ndarray:
        if self.architecture == "conv":
            return frames_to_grey52(batch)
        x = as_2d_float(batch if self.preprocessor is None else self.preprocessor(batch))
        if x.shape[1] != self.input_dim:
            raise ValueError(
                f"states must have input_dim={self.input_dim} entries, got {x.shape[1]}"
            )
        return x

    def observe(self, batch: Any) -> None:
        """Adds states to the FIFO replay pool (the oldest are overwritten when full)."""
        x = self._inputs(batch).astype(np.float32)[-self.pool_size :]
        if self._probe.shape[0] < self.probe_size:
            self._probe = np.concatenate([self._probe, x[: self.probe_size - len(self._probe)]])
        index = (self._pool_next + np.arange(x.shape[0])) % self.pool_size
        self._pool[index] = x
        self._pool_next = int((self._pool_next + x.shape[0]) % self.pool_size)
        self._pool_len = min(self.pool_size, self._pool_len + x.shape[0])

    def _code_probabilities(self, x: np.ndarray) -> torch.Tensor:
        with torch.no_grad():
            return torch.sigmoid(self.model.encoder(torch.as_tensor(x, dtype=torch.float32)))

    def binary_codes(self, batch: Any) -> np.ndarray:
        """⌊b(s)⌉ ∈ {0, 1}^K as (N, K) uint8."""
        return (self._code_probabilities(self._inputs(batch)) >= 0.5).numpy().astype(np.uint8)

    def codes(self, batch: Any) -> np.ndarray:
        """The (N, k) int8 SimHash codes sgn(A·⌊b(s)⌉)."""
        return self.simhash.codes(self.binary_codes(batch))

    def loss(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Returns (total loss, reconstruction term, binarization term) on a batch."""
        b = torch.sigmoid(self.model.encoder(x))
        noise = (torch.rand(b.shape, generator=self._generator) * 2.0 - 1.0) * self.noise
        reconstruction = 0.5 * ((self.model.decoder(b + noise) - x) ** 2).sum(dim=1).mean()
        binarization = (self.lam / self.code_bits) * torch.minimum((1 - b) ** 2, b**2).sum(
            dim=1
        ).mean()
        return reconstruction + binarization, reconstruction, binarization

    def train(self) -> dict[str, float]:
        """Runs ``train_steps`` Adam steps on the pool; returns loss and bit-flip metrics.

        Returns:
            ``reconstruction_loss`` (mean of the last step's batch), ``binarization_loss``
            and ``bit_flip_rate``: the fraction of the K code bits of the fixed probe
            states that changed in this retraining (0 on the first one).

        """
        if self._pool_len == 0:
            raise ValueError("the replay pool is empty: observe() states before train()")
        before = self.binary_codes_of_probe()
        recon = binar = torch.zeros(())
        for _ in range(self.train_steps):
            rows = torch.randint(
                self._pool_len, (min(self.batch_size, self._pool_len),), generator=self._generator
            ).numpy()
            total, recon, binar = self.loss(torch.as_tensor(self._pool[rows]))
            self.optimizer.zero_grad()
            total.backward()
            self.optimizer.step()
        after = self.binary_codes_of_probe()
        flips = float(np.mean(before != after)) if self.num_trainings and before.size else 0.0
        self.num_trainings += 1
        return {
            "reconstruction_loss": float(recon.detach()),
            "binarization_loss": float(binar.detach()),
            "bit_flip_rate": flips,
        }

    def binary_codes_of_probe(self) -> np.ndarray:
        """⌊b(s)⌉ of the fixed probe states (empty until states were observed)."""
        if self._probe.shape[0] == 0:
            return np.zeros((0, self.code_bits), dtype=np.uint8)
        return (self._code_probabilities(self._probe) >= 0.5).numpy().astype(np.uint8)

    def state_dict(self) -> dict[str, Any]:
        """AE weights, optimizer, replay pool, probe set, SimHash A and RNG state."""
        return {
            "model": {k: v.clone() for k, v in self.model.state_dict().items()},
            "optimizer": self.optimizer.state_dict(),
            "pool": self._pool[: self._pool_len].copy()
            if self._pool_len < self.pool_size
            else self._pool.copy(),
            "pool_next": self._pool_next,
            "probe": self._probe.copy(),
            "simhash": self.simhash.state_dict(),
            "generator": self._generator.get_state(),
            "num_trainings": self.num_trainings,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores what ``state_dict`` returned."""
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        pool = np.asarray(state["pool"], dtype=np.float32)
        self._pool[: pool.shape[0]] = pool
        self._pool_len = int(pool.shape[0])
        self._pool_next = int(state["pool_next"])
        self._probe = np.asarray(state["probe"], dtype=np.float32)
        self.simhash.load_state_dict(state["simhash"])
        self._generator.set_state(state["generator"])
        self.num_trainings = int(state["num_trainings"])
