"""Reference data sets (loaded through a data home or a checksummed download) and generators."""

from ._base import Dataset
from ._fetch import REMOTE_FILES, fetch_file, get_cache_dir, get_data_home
from .adult import load_adult
from .compas import load_compas
from .diabetes import load_diabetes
from .synthetic import make_cbs_semisynthetic, make_gaussian_threshold, make_gaussian_threshold_like

__all__ = [
    "REMOTE_FILES",
    "Dataset",
    "fetch_file",
    "get_cache_dir",
    "get_data_home",
    "load_adult",
    "load_compas",
    "load_diabetes",
    "make_cbs_semisynthetic",
    "make_gaussian_threshold",
    "make_gaussian_threshold_like",
]
