"""PATE beyond the pure layer: the supervised pipeline and the RL teacher ensemble.

``supervised`` is Ray-free (numpy, scikit-learn). The RL pieces (teacher ensemble service,
labeling callback) import Ray and live in their own modules.
"""

from rllib_privacy.pate.supervised import (
    QUERY_SELECTIONS,
    STUDENTS,
    PoolLabelSpreading,
    SupervisedPATEResult,
    SupervisedPATESettings,
    load_digits_split,
    load_mnist5k_split,
    representative_order,
    run_digits_pate,
    run_supervised_pate,
    split_dataset,
)

__all__ = [
    "QUERY_SELECTIONS",
    "STUDENTS",
    "PoolLabelSpreading",
    "SupervisedPATEResult",
    "SupervisedPATESettings",
    "load_digits_split",
    "load_mnist5k_split",
    "representative_order",
    "run_digits_pate",
    "run_supervised_pate",
    "split_dataset",
]
