"""Audit specs: the TOML files in the repository's ``models/specs/`` that the CLI runs."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ._csv_input import read_csv
from .data import AuditData
from .datasets import load_adult, load_compas

__all__ = ["AuditSpec", "load_spec"]

_SECTIONS = {"audit", "data", "columns", "metrics", "published", "study", "inference"}
STUDIES = (
    "foulds-table2",
    "foulds-table3",
    "foulds-compas-case",
    "foulds-calibration",
    "boxer-table4",
    "herlihy-simulation",
)
#: The [study] keys each study reads (besides ``name``); others are refused, not ignored.
_STUDY_KEYS = {
    "foulds-table2": {"dataset", "seed"},
    "foulds-table3": {"dataset", "replicates", "seed", "point_estimates"},
    "foulds-compas-case": {"seed"},
    "foulds-calibration": {"replicates", "n_rows", "seed"},
    "boxer-table4": {"restarts", "penalty", "permutations", "n_jobs", "seed"},
    "herlihy-simulation": {"draws", "n_eval", "bootstrap", "seed", "population"},
}
_INFERENCE_KEYS = {"draws", "chains", "dnn", "dnn_iterations"}
_METRICS_KEYS = {"pseudo_count"}
_DATA_KEYS = {
    "compas": {"dataset", "coding"},
    "adult": {"dataset", "split"},
    "csv": {"dataset", "path", "encoding", "sep", "decimal"},
}
#: the options of a CSV spec's reading (strings; read_csv's defaults where not given)
_CSV_OPTIONS = ("encoding", "sep", "decimal")
_COLUMN_KEYS = {"protected", "outcome", "score", "decision", "threshold", "covariates", "pos_label"}
_DATASETS = ("compas", "adult", "csv")


@dataclass
class AuditSpec:
    """A parsed audit spec.

    Attributes
    ----------
    name : str
    data : dict
        ``dataset`` (compas, adult or csv: the default when a ``path`` is given) and its
        options (``coding``, ``split``; a CSV file's ``path`` relative to the spec file and
        its ``encoding``, ``sep`` and ``decimal``, as the command line's options).
    columns : dict
        Column roles, overriding those of a packaged data set.
    metrics : dict
        ``pseudo_count`` (Dirichlet smoothing).
    published : list of dict
        Numbers from the source paper that this spec reproduces.
    """

    name: str
    data: dict[str, Any]
    columns: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    published: list[dict[str, Any]] = field(default_factory=list)
    path: Path | None = None
    study: dict[str, Any] = field(default_factory=dict)
    inference: dict[str, Any] = field(default_factory=dict)

    def csv_frame(self) -> pd.DataFrame:
        """The CSV file a ``dataset = "csv"`` spec names (its path relative to the spec),
        read as the command line reads one (:func:`bayesfair._csv_input.read_csv`), with the
        spec's ``encoding``, ``sep`` and ``decimal``."""
        base = self.path.parent if self.path else Path.cwd()
        options = {k: self.data[k] for k in _CSV_OPTIONS if k in self.data}
        return read_csv(
            base / self.data["path"],
            **options,
            protected=self.columns.get("protected", ()),
            how=lambda option, value: f'[data] {option} = "{value}"',
        )

    def audit_data(self, data_home: str | os.PathLike | None = None) -> AuditData:
        """Load the data the spec names and apply its column roles."""
        kind = self.data.get("dataset")
        if kind == "compas":
            ds = load_compas(self.data.get("coding", "cbs"), data_home=data_home)
        elif kind == "adult":
            ds = load_adult(self.data.get("split", "train"), data_home=data_home)
        else:
            return AuditData(self.csv_frame(), **self.columns)
        return ds.audit_data(**self.columns)


def load_spec(path: str | os.PathLike) -> AuditSpec:
    """Read and validate an audit spec (TOML)."""
    path = Path(path)
    with open(path, "rb") as fh:
        try:
            raw = tomllib.load(fh)
        except tomllib.TOMLDecodeError as err:
            raise ValueError(f"{path}: not valid TOML ({err})") from None
    unknown = set(raw) - _SECTIONS
    if unknown:
        raise ValueError(
            f"{path}: unknown section(s) {sorted(unknown)}; allowed {sorted(_SECTIONS)}"
        )
    _check_section_types(path, raw)
    if raw.get("study"):
        return _study_spec(path, raw)
    return _audit_spec(path, raw)


def _study_spec(path: Path, raw: dict) -> AuditSpec:
    """A ``[study]`` spec: a paper's reproduction, with its ``[inference]`` settings and,
    for the simulation, a population (the harness's, or ``[data]`` of one's own)."""
    data, study = dict(raw.get("data", {})), dict(raw["study"])
    if study.get("name") not in STUDIES:
        raise ValueError(
            f"{path}: [study] name must be one of {STUDIES}, got {study.get('name')!r}"
        )
    inference = dict(raw.get("inference", {}))
    _check_keys(path, "study", set(study) - {"name"}, _STUDY_KEYS[study["name"]])
    _check_keys(path, "inference", set(inference), _INFERENCE_KEYS)
    _check_values(path, "study", study)
    _check_values(path, "inference", inference)
    if study["name"] in ("foulds-table2", "foulds-table3") and study.get("dataset") not in (
        "adult",
        "compas",
    ):
        raise ValueError(
            f"{path}: [study] {study['name']} needs dataset = 'adult' or 'compas', "
            f"got {study.get('dataset')!r}"
        )
    if study.get("point_estimates", "map") not in ("map", "authors"):
        raise ValueError(
            f"{path}: [study] point_estimates must be 'map' or 'authors', "
            f"got {study['point_estimates']!r}"
        )
    columns = dict(raw.get("columns", {}))
    if data or columns:
        _check_study_population(path, study["name"], data, columns)
    if "population" in study:
        from .replication.herlihy import POPULATIONS

        if study["population"] not in POPULATIONS:
            raise ValueError(
                f"{path}: [study] population must be one of {POPULATIONS}, "
                f"got {study['population']!r}"
            )
        if data:
            raise ValueError(
                f"{path}: [study] population = {study['population']!r} and [data] both name "
                "the simulation's population; keep one"
            )
    return AuditSpec(
        name=str(raw.get("audit", {}).get("name", path.stem)),
        data=data,
        columns=columns,
        published=raw.get("published", []),
        path=path,
        study=study,
        inference=inference,
    )


def _audit_spec(path: Path, raw: dict) -> AuditSpec:
    """An audit spec: a data set (one of the package's, or a CSV with its ``[columns]``),
    the metrics' options and the published numbers to compare with."""
    data = dict(raw.get("data", {}))
    if "dataset" not in data and "path" in data:  # a path names a CSV file
        data["dataset"] = "csv"
    if data.get("dataset") not in _DATASETS:
        raise ValueError(
            f"{path}: [data] dataset must be one of {_DATASETS}, got {data.get('dataset')!r}"
        )
    columns = dict(raw.get("columns", {}))
    _check_keys(path, "columns", set(columns), _COLUMN_KEYS)
    _check_keys(path, "data", set(data), _DATA_KEYS[data["dataset"]])
    _check_keys(path, "metrics", set(raw.get("metrics", {})), _METRICS_KEYS)
    _check_values(path, "metrics", dict(raw.get("metrics", {})))
    if "inference" in raw:
        raise ValueError(f"{path}: [inference] is read by [study] specs only")
    if data["dataset"] == "csv":
        if "path" not in data:
            raise ValueError(f"{path}: [data] dataset = 'csv' needs a path")
        for key in ("path", *_CSV_OPTIONS):
            if key in data and not isinstance(data[key], str):
                raise ValueError(f"{path}: [data] {key} must be a string, got {data[key]!r}")
        missing = {"protected", "outcome"} - set(columns)
        if missing:
            raise ValueError(f"{path}: a csv spec needs [columns] {sorted(missing)}")
    published = raw.get("published", [])
    if not isinstance(published, list):
        raise ValueError(f"{path}: [[published]] must be an array of tables")
    return AuditSpec(
        name=str(raw.get("audit", {}).get("name", path.stem)),
        data=data,
        columns=columns,
        metrics=dict(raw.get("metrics", {})),
        published=published,
        path=path,
    )


def _check_section_types(path: Path, raw: dict) -> None:
    """Every section is a table (``[data]``), ``[[published]]`` an array of tables:
    ``data = "csv"`` or ``audit = 5`` at the top level are refused by name."""
    for section, value in raw.items():
        if section == "published":
            if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
                raise ValueError(
                    f"{path}: published must be an array of tables ([[published]] blocks), "
                    f"got {value!r}"
                )
        elif not isinstance(value, dict):
            raise ValueError(
                f"{path}: {section} must be a table (a [{section}] section with keys), got "
                f"{section} = {value!r}"
            )
    name = raw.get("audit", {}).get("name")
    if name is not None and not isinstance(name, str):
        raise ValueError(f"{path}: [audit] name must be a string, got {name!r}")
    columns = raw.get("columns", {})
    for key in ("outcome", "score", "decision"):
        if key in columns and not isinstance(columns[key], str):
            raise ValueError(
                f"{path}: [columns] {key} must be a column name (a string), got {columns[key]!r}"
            )
    protected = columns.get("protected")
    names = [protected] if isinstance(protected, str) else protected
    if protected is not None and not (
        isinstance(names, list) and names and all(isinstance(c, str) for c in names)
    ):
        raise ValueError(
            f"{path}: [columns] protected must be a column name or a list of them, got "
            f"{protected!r}"
        )


#: The type of every numeric or switch key of [study], [inference] and [metrics].
_KEY_TYPES = {
    "float": {"penalty", "pseudo_count"},
    "bool": {"dnn"},
    "str": {"dataset", "point_estimates", "population"},
}


def _check_values(path: Path, section: str, values: dict) -> None:
    """Refuse a value of the wrong type (draws = 2.5 ran 2 draws, dnn = "false" fitted the
    network) before anything runs; every key not listed in _KEY_TYPES is a whole number."""
    for key, v in values.items():
        if key == "name":
            continue
        if key in _KEY_TYPES["float"]:
            ok, what = isinstance(v, (int, float)) and not isinstance(v, bool), "a number"
        elif key in _KEY_TYPES["bool"]:
            ok, what = isinstance(v, bool), "true or false"
        elif key in _KEY_TYPES["str"]:
            ok, what = isinstance(v, str), "a string"
        else:
            ok, what = isinstance(v, int) and not isinstance(v, bool) and v >= 0, "a whole number"
        if not ok:
            raise ValueError(f"{path}: [{section}] {key} must be {what}, got {v!r}")


def _check_keys(path: Path, section: str, keys: set, allowed: set) -> None:
    """A misspelt key would silently leave its default in force: refuse it."""
    bad = keys - allowed
    if bad:
        raise ValueError(
            f"{path}: unknown [{section}] key(s) {sorted(bad)}; allowed {sorted(allowed)}"
        )


def _check_study_population(path: Path, name: str, data: dict, columns: dict) -> None:
    """A study's own population: only the Herlihy simulation takes one, from a CSV file
    whose rows are the population with known truth."""
    if name != "herlihy-simulation":
        raise ValueError(
            f"{path}: [data] and [columns] of a study are read only by 'herlihy-simulation' (a "
            f"population of your own); {name!r} runs on its paper's data"
        )
    if data.get("dataset") != "csv" or "path" not in data:
        raise ValueError(f"{path}: the simulation's population needs [data] dataset = 'csv', path")
    allowed = {"protected", "outcome", "decision", "score"}
    bad = set(columns) - allowed
    if bad:
        raise ValueError(
            f"{path}: the simulation's [columns] take {sorted(allowed)}, got {sorted(bad)} "
            "(recode the outcome and decision as 0/1 in the file)"
        )
    missing = {"protected", "outcome"} - set(columns)
    if missing:
        raise ValueError(f"{path}: the simulation's population needs [columns] {sorted(missing)}")


def run_study(spec: AuditSpec, data_home: str | os.PathLike | None = None, small: bool = False):
    """Run the reproduction a spec's ``[study]`` names; returns a DataFrame.

    ``small`` shrinks draws and replicates for a smoke run (the test suite uses it).
    """
    name = spec.study["name"]
    if name == "herlihy-simulation":
        return _herlihy_simulation(spec, data_home, small)
    if name == "boxer-table4":
        from .replication import boxer

        st = spec.study
        return boxer.table4(
            data_home=data_home,
            n_restarts=20 if small else int(st.get("restarts", 150)),
            penalty=float(st.get("penalty", 1.0)),
            n_resamples=0 if small else int(st.get("permutations", 0)),
            n_jobs=int(st.get("n_jobs", 1)),
            random_state=int(st.get("seed", 0)),
        )
    return _foulds_study(spec, data_home, small)


def _herlihy_simulation(spec: AuditSpec, data_home, small: bool):
    """Herlihy et al.'s simulation on the harness's population (``population =``), the
    Adult one, or the spec's own data; the small groups' errors and the 95% coverage."""
    from .replication import herlihy

    st, inf = spec.study, spec.inference
    seed = int(st.get("seed", 1))
    own: dict = {}
    if "population" in st:  # one of the harness's (load_spec refuses it beside [data])
        own["pop_truth"] = herlihy.population(data_home, seed, name=str(st["population"]))
    if spec.data:  # a population of one's own (checked by load_spec)
        cols = spec.columns
        own = dict(
            pop_truth=spec.csv_frame(),
            protected=cols["protected"],
            outcome=cols["outcome"],
            decision=cols.get("decision"),
            score=cols.get("score"),
        )
    if "pop_truth" not in own:  # the Adult population, built once for both uses
        own["pop_truth"] = herlihy.population(data_home, seed)
    pop = own["pop_truth"]
    pop = pop[0] if isinstance(pop, tuple) else pop
    metrics = herlihy._available_metrics(own.get("decision", "decision"), own.get("score", "score"))
    sim = herlihy.simulate(
        2 if small else int(st.get("draws", 20)),
        metrics=metrics[:2] if small else metrics,
        n_eval=int(st.get("n_eval", 5000)),
        estimators=herlihy.simulation_estimators(
            pop,
            draws=100 if small else int(inf.get("draws", 500)),
            chains=2 if small else int(inf.get("chains", 2)),
            n_resamples=50 if small else int(st.get("bootstrap", 500)),
        ),
        data_home=data_home,
        random_state=seed,
        **own,
    )
    mae, cov = herlihy.summarise(sim)
    cov95 = cov[cov["level"] == 0.95].drop(columns=["level", "n"])
    return mae.merge(cov95, on=["metric", "estimator"], how="left")


def _foulds_study(spec: AuditSpec, data_home, small: bool):
    """Foulds et al.'s Tables 2 and 3, the COMPAS case study, or the calibration study."""
    from .models import DirichletMultinomial, HierarchicalLogisticRegression
    from .replication import foulds

    st, inf = spec.study, spec.inference
    if small:  # a smoke run: every code path, little sampling, no neural network
        draws, chains, dnn, dnn_iter = 100, 2, False, 0
    else:
        draws = int(inf.get("draws", 1000))
        chains = int(inf.get("chains", 4))
        dnn = bool(inf.get("dnn", True))
        dnn_iter = int(inf.get("dnn_iterations", 30_000))
    seed = int(st.get("seed", 0))
    models = foulds.default_models(draws=draws, chains=chains, dnn=dnn, dnn_iterations=dnn_iter)
    name = st["name"]
    if name == "foulds-table2":
        return foulds.table2(st["dataset"], models=models, data_home=data_home, random_state=seed)
    if name == "foulds-table3":
        return foulds.table3(
            st["dataset"],
            models=models,
            data_home=data_home,
            replicates=2 if small else int(st.get("replicates", 10)),
            random_state=seed,
            point_estimates=st.get("point_estimates", "map"),
        )
    if name == "foulds-compas-case":
        pf = foulds.compas_case_study(
            HierarchicalLogisticRegression(draws=draws, tune=draws, chains=chains),
            data_home=data_home,
            random_state=seed,
        )
        return pf.summary()
    factories = {
        "EDF": lambda s: DirichletMultinomial(pseudo_count=0.5, draws=draws, random_state=s),
        "HLR": lambda s: HierarchicalLogisticRegression(
            draws=draws, tune=draws, chains=chains, random_state=s
        ),
    }
    return foulds.calibration_study(
        factories,
        replicates=5 if small else int(st.get("replicates", 50)),
        n_rows=int(st.get("n_rows", 7214)),
        random_state=seed,
    )
