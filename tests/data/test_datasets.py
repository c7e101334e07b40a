"""Data sets: the facts of ../shared/data/README.md, downloads over loopback, generators."""

from __future__ import annotations

import hashlib
import http.server
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from bayesfair import AuditData
from bayesfair.datasets import (
    REMOTE_FILES,
    fetch_file,
    load_adult,
    load_compas,
    make_cbs_semisynthetic,
    make_gaussian_threshold,
    make_gaussian_threshold_like,
)
from bayesfair.metrics import empirical_fairness, group_rates


# ------------------------------------------------------------------ COMPAS, CBS coding
@pytest.fixture(scope="module")
def compas_cbs(data_home):
    return load_compas("cbs", data_home=data_home)


def test_compas_cbs_facts(compas_cbs):
    f = compas_cbs.frame
    assert len(f) == 6172
    non = f[f["two_year_recid"] == 0]
    assert len(non) == 3363
    black = non["race"] == "African-American"
    male = non["sex"] == "Male"
    assert (black & male).sum() == 1168
    assert (~black & male).sum() == 1433
    felony = non["charge"] == "Felony"
    assert (felony & (non["age"] == "Under 25")).sum() == 403
    assert (felony & (non["age"] == "25+")).sum() == 1583
    assert (non["priors"] == "Over 5").sum() == 349


def test_compas_cbs_false_positive_rates(compas_cbs):
    f = compas_cbs.frame.assign(
        black=lambda d: np.where(d["race"] == "African-American", "Black", "non-Black")
    )
    data = AuditData(f, ["black", "sex"], "two_year_recid", decision="high_risk")
    fpr = group_rates(data, ["fpr"], by="black").set_index("black")["value"]
    assert round(fpr["Black"], 2) == 0.42 and round(fpr["non-Black"], 2) == 0.20
    men = group_rates(data, ["fpr"]).set_index(["black", "sex"])["value"]
    assert round(men[("Black", "Male")], 2) == 0.44
    assert round(men[("non-Black", "Male")], 2) == 0.19


def test_compas_cbs_probability_is_decile_reoffence_rate(compas_cbs):
    f = compas_cbs.frame
    rates = f.groupby("decile_score")["two_year_recid"].mean()
    np.testing.assert_allclose(f["P"], f["decile_score"].map(rates))
    assert ((f["high_risk"] == 1) == (f["decile_score"] >= 5)).all()


# ------------------------------------------------------------------ COMPAS, Foulds coding
def test_compas_foulds_coding(data_home):
    ds = load_compas("foulds", data_home=data_home)
    assert len(ds) == 7214
    data = ds.audit_data()
    assert data.n_intersections == 8 and len(data.empty_intersections) == 0
    assert data.categories["race"] == ["African-American", "Caucasian", "Hispanic", "Other"]
    assert data.table["n"].sum() == 7214
    # decision = score_text Medium or High; Low is 3,897 of the rows
    assert (ds.frame["compas_decision"] == 0).sum() == 3897


def test_unknown_coding_is_refused(data_home):
    with pytest.raises(ValueError, match="coding"):
        load_compas("propublica", data_home=data_home)


# ------------------------------------------------------------------ Adult
def test_adult_splits(data_home):
    train = load_adult("train", data_home=data_home)
    test = load_adult("test", data_home=data_home)
    assert len(train) == 32561 and len(test) == 16281
    for ds in (train, test):
        d = ds.audit_data()
        assert d.n_intersections == 16 and len(d.empty_intersections) == 0
    both = load_adult("both", data_home=data_home)
    assert len(both) == 48842 and set(both.frame["split"]) == {"train", "test"}
    # test labels end in '.', which must not turn every label into 0
    assert 0.2 < test.frame["income_gt_50k"].mean() < 0.3
    with pytest.raises(ValueError, match="split"):
        load_adult("validation", data_home=data_home)


# ------------------------------------------------------------------ download over loopback
def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_download_compas_from_loopback(http_root, data_home, tmp_path):
    root, url = http_root
    shutil.copy(data_home / "compas-scores-two-years.csv", root)
    home = tmp_path / "home"
    path = fetch_file("compas-scores-two-years.csv", home, mirror=url)
    assert path == home / "compas-scores-two-years.csv"
    assert _sha(path) == REMOTE_FILES["compas-scores-two-years.csv"].sha256[0]
    assert len(load_compas("cbs", data_home=home)) == 6172  # found locally now
    (root / "compas-scores-two-years.csv").unlink()
    assert fetch_file("compas-scores-two-years.csv", home, mirror=url) == path  # no new request


def test_download_adult_in_upstream_layout(http_root, data_home, tmp_path):
    """Rebuild the exact UCI files (no header, '|1x3' line, trailing blank line) and load them."""
    root, url = http_root
    lines = (data_home / "adult.data").read_text().splitlines(keepends=True)
    (root / "adult.data").write_text("".join(lines[1:]) + "\n")
    lines = (data_home / "adult.test").read_text().splitlines(keepends=True)
    (root / "adult.test").write_text("|1x3 Cross validator\n" + "".join(lines[1:]) + "\n")
    assert _sha(root / "adult.data") == REMOTE_FILES["adult.data"].sha256[0]
    assert _sha(root / "adult.test") == REMOTE_FILES["adult.test"].sha256[0]
    home = tmp_path / "home"
    ds = load_adult("both", data_home=home, mirror=url)
    assert len(ds) == 48842 and ds.audit_data().n_intersections == 16


def test_download_into_cache_when_data_home_is_read_only(
    http_root, data_home, tmp_path, monkeypatch
):
    root, url = http_root
    shutil.copy(data_home / "compas-scores-two-years.csv", root)
    cache = tmp_path / "cache"
    monkeypatch.setenv("BAYESFAIR_CACHE", str(cache))
    monkeypatch.setattr("bayesfair.datasets._fetch._writable_dir", lambda p: p == cache)
    path = fetch_file("compas-scores-two-years.csv", tmp_path / "ro", mirror=url)
    assert path == cache / "compas-scores-two-years.csv"


def test_checksum_mismatch_on_download_keeps_nothing(http_root, tmp_path):
    root, url = http_root
    (root / "compas-scores-two-years.csv").write_text("id,race\n1,x\n")
    home = tmp_path / "home"
    with pytest.raises(ValueError, match="sha256"):
        fetch_file("compas-scores-two-years.csv", home, mirror=url)
    assert list(home.iterdir()) == []


def test_failed_download_says_where_the_file_was_looked_for(http_root, tmp_path, monkeypatch):
    _, url = http_root  # serves an empty folder: HTTP 404
    monkeypatch.setenv("BAYESFAIR_CACHE", str(tmp_path / "cache"))
    home = tmp_path / "home"
    for mirror, reason in ((url, "HTTP Error 404"), ("http://127.0.0.1:9", "refused")):
        with pytest.raises(ConnectionError) as info:
            fetch_file("adult.data", home, mirror=mirror)
        msg = str(info.value)
        assert f"'adult.data' is not in ['{home}', '{tmp_path / 'cache'}']" in msg
        assert f"downloading it from {mirror}/adult.data failed" in msg and reason in msg
        assert "BAYESFAIR_DATA" in msg
    assert list(home.iterdir()) == []  # nothing half-written kept


def test_checksum_mismatch_in_data_home(tmp_path):
    (tmp_path / "adult.data").write_text("not the adult data\n")
    with pytest.raises(ValueError, match="not a known version"):
        fetch_file("adult.data", tmp_path)


def test_missing_file_without_download(tmp_path):
    with pytest.raises(FileNotFoundError, match="download_if_missing=False"):
        load_compas(data_home=tmp_path, download_if_missing=False)
    with pytest.raises(ValueError, match="unknown data file"):
        fetch_file("iris.csv", tmp_path)


def test_env_data_home(monkeypatch, data_home):
    monkeypatch.setenv("BAYESFAIR_DATA", str(data_home))
    assert len(load_compas("foulds")) == 7214


# ------------------------------------------------------------------ generators
def test_gaussian_threshold_truth_is_the_generating_probability():
    ds = make_gaussian_threshold(group_sizes=np.full(16, 4000), random_state=3)
    data = ds.audit_data()
    t = ds.truth["table"]
    k = data.counts()[:, 1]
    # every group's positive count is consistent with its true probability
    pvals = [
        binomtest(int(ki), 4000, float(p)).pvalue for ki, p in zip(k, t["p_true"], strict=True)
    ]
    assert min(pvals) > 0.001 / 16  # Bonferroni at 0.001
    # truth epsilon/gamma come from the metric functions on the true P(y|s)
    mu = t["w"] * (np.indices((4, 2, 2)).reshape(3, -1) + 1).sum(axis=0)
    np.testing.assert_allclose(t["mu"], mu)
    est = empirical_fairness(data, pseudo_count=0.5)
    assert abs(est.gamma - ds.truth["gamma"]) < 0.01


def test_gaussian_threshold_is_seeded_and_validates():
    a = make_gaussian_threshold(n_rows=500, random_state=7).frame
    b = make_gaussian_threshold(n_rows=500, random_state=7).frame
    assert a.equals(b)
    with pytest.raises(ValueError, match="group_sizes"):
        make_gaussian_threshold(group_sizes=[1, 2, 3])
    with pytest.raises(ValueError, match="weights"):
        make_gaussian_threshold(weights=np.full(16, 1.5))
    with pytest.raises(ValueError, match="two values"):
        make_gaussian_threshold({"a": 1})


def test_gaussian_threshold_like_copies_group_sizes():
    base = make_gaussian_threshold(n_rows=3000, random_state=1).audit_data()
    like = make_gaussian_threshold_like(base, random_state=2)
    np.testing.assert_array_equal(like.audit_data().group_sizes(), base.group_sizes())


def test_cbs_semisynthetic_injection():
    kw = dict(protected_class=("race", "African-American"), n_rows=20000, random_state=11)
    null = make_cbs_semisynthetic(**kw)
    sep = make_cbs_semisynthetic(mu_sep=2.0, **kw)
    suf = make_cbs_semisynthetic(mu_suf=2.0, **kw)
    s = null.truth["in_subgroup"]
    assert s.sum() > 100
    assert np.array_equal(s, sep.truth["in_subgroup"])
    assert "race" not in null.covariates and null.frame["protected"].sum() > 0
    assert s[~null.frame["protected"].to_numpy()].sum() == 0  # only the protected class
    logit = lambda p: np.log(p / (1 - p))  # noqa: E731
    shift = logit(sep.frame["p"]) - logit(null.frame["p"])
    np.testing.assert_allclose(shift[s], 2.0)
    np.testing.assert_allclose(shift[~s], 0.0, atol=1e-12)
    # sufficiency bias lowers the outcome rate inside S_bias only
    assert suf.frame["y"][s].mean() < null.frame["y"][s].mean() - 0.2
    sub = null.truth["subgroup"]
    assert sum(len(v) < len(null.frame[c].cat.categories) for c, v in sub.items()) <= 2


def test_cbs_semisynthetic_accepts_real_covariates(compas_cbs):
    cov = compas_cbs.frame[["race", "sex", "age", "charge", "priors"]]
    ds = make_cbs_semisynthetic(cov, random_state=0)
    assert len(ds) == 6172
    with pytest.raises(ValueError, match="n_bias"):
        make_cbs_semisynthetic(cov, n_bias=9, random_state=0)


# ------------------------------------------------------------------ downloads that stop
class _Stalling(http.server.BaseHTTPRequestHandler):
    """Announces 10 MB, sends 1,000 bytes, then waits (a stalled or cut connection)."""

    stall = 30.0

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(10_000_000))
        self.end_headers()
        self.wfile.write(b"x" * 1000)
        self.wfile.flush()
        time.sleep(self.stall)

    def log_message(self, *args):
        pass


@pytest.fixture
def stalling_server():
    def serve(stall: float):
        handler = type("H", (_Stalling,), {"stall": stall})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    servers: list = []
    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


def test_a_cut_download_says_so_and_keeps_nothing(stalling_server, tmp_path):
    url = stalling_server(0.0)  # the server closes after 1,000 of 10,000,000 bytes
    home = tmp_path / "home"
    with pytest.raises(ConnectionError, match="stopped after 1000 of 10000000 bytes"):
        fetch_file("adult.data", home, mirror=url)
    assert list(home.iterdir()) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_download_stopped_by_a_signal_keeps_nothing(stalling_server, tmp_path, sig):
    """The signal stops the stalled download at once (exit status 143 for SIGTERM, the
    interrupt's for SIGINT) and the temporary file is removed. Without its handling the
    download would still fail, 30 s later, when the server gives up: the exit status
    tells the two apart. The child blocks both signals while numpy starts its BLAS
    threads, which inherit the block: the kernel may deliver a signal to any thread that
    does not block it, and one delivered to a BLAS thread does not interrupt the main
    thread's read."""
    url = stalling_server(30.0)
    home = tmp_path / "home"
    code = (
        "import signal; s = {signal.SIGTERM, signal.SIGINT}; "
        "signal.pthread_sigmask(signal.SIG_BLOCK, s); "
        "import sys; from bayesfair.datasets import fetch_file; "
        "signal.pthread_sigmask(signal.SIG_UNBLOCK, s); "
        f"print('start', flush=True); fetch_file('adult.data', {str(home)!r}, mirror={url!r})"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "start"
    deadline = time.monotonic() + 60
    while not any(home.glob(".adult.data.*")) and time.monotonic() < deadline:
        time.sleep(0.05)  # until the download has begun
    assert any(home.glob(".adult.data.*"))
    proc.send_signal(sig)
    assert proc.wait(timeout=60) == (143 if sig == signal.SIGTERM else -signal.SIGINT)
    assert list(home.iterdir()) == []


def test_a_downloaded_file_gets_the_umask_mode(http_root, data_home, tmp_path):
    root, url = http_root
    shutil.copy(data_home / "adult.data", root)
    old = os.umask(0o022)
    try:
        path = fetch_file("adult.data", tmp_path / "home", mirror=url)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_the_checksum_error_names_a_fix_that_exists(tmp_path):
    (tmp_path / "adult.data").write_text("not the adult data\n")
    with pytest.raises(ValueError) as info:
        fetch_file("adult.data", tmp_path)
    assert "verify=False" not in str(info.value) and "Remove it" in str(info.value)
