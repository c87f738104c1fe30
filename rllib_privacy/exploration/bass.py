"""BASS features of Atari frames (Tang et al. 2017 §3.2; Bellemare et al. 2012).

feature(i, j, z) = ⌊ B/(255·C²) · Σ_{(x, y) ∈ cell(i, j)} I(x, y, z) ⌋: the frame is cut
into C×C cells and each cell's mean intensity per channel is quantized into B bins. The
features are then SimHashed (TRPO-BASS-SimHash). Frames whose size is not a multiple of
C get partial border cells, summed over the pixels they have (so their features are
smaller); the paper does not say how it handles the border.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rllib_privacy._validation import check_int_in_range

__all__ = ["BASS"]


class BASS:
    """The BASS preprocessor g: (N, H, W[, Z]) frames in [0, 255] → (N, ⌈H/C⌉·⌈W/C⌉·Z).

    Args:
        frame_shape: (H, W) or (H, W, Z) of one frame.
        cell_size: C, the cell side in pixels (paper: 20).
        bins: B, the number of intensity bins per cell and channel (paper: 20).
        intensity_range: (low, high) of the pixel values, rescaled to [0, 255] first
            (e.g. (−1, 1) for RLlib's normalized Atari frames).

    """

    def __init__(
        self,
        frame_shape: tuple[int, ...],
        *,
        cell_size: int = 20,
        bins: int = 20,
        intensity_range: tuple[float, float] = (0.0, 255.0),
    ) -> None:
        if len(frame_shape) not in (2, 3):
            raise ValueError(f"frame_shape must be (H, W) or (H, W, Z), got {frame_shape}")
        self.frame_shape = tuple(int(s) for s in frame_shape)
        self.cell_size = check_int_in_range("cell_size", cell_size, low=1)
        self.bins = check_int_in_range("bins", bins, low=1)
        self.intensity_range = (float(intensity_range[0]), float(intensity_range[1]))
        if not self.intensity_range[1] > self.intensity_range[0]:
            raise ValueError(
                f"intensity_range must be (low, high) with high > low, got {intensity_range}"
            )
        h, w = self.frame_shape[:2]
        self._cells = (-(-h // self.cell_size), -(-w // self.cell_size))

    @property
    def output_dim(self) -> int:
        """D of g(s)."""
        channels = self.frame_shape[2] if len(self.frame_shape) == 3 else 1
        return self._cells[0] * self._cells[1] * channels

    def __call__(self, frames: Any) -> np.ndarray:
        """The (N, D) BASS features of a batch of frames."""
        low, high = self.intensity_range
        x = (np.asarray(frames, dtype=np.float64) - low) * (255.0 / (high - low))
        if x.shape[1:] != self.frame_shape:
            raise ValueError(f"frames must have shape (N, *{self.frame_shape}), got {x.shape}")
        if x.ndim == 3:
            x = x[..., None]
        n, h, w, z = x.shape
        c = self.cell_size
        padded = np.zeros((n, self._cells[0] * c, self._cells[1] * c, z))
        padded[:, :h, :w] = x
        sums = padded.reshape(n, self._cells[0], c, self._cells[1], c, z).sum(axis=(2, 4))
        return np.floor(self.bins / (255.0 * c * c) * sums).reshape(n, -1)
