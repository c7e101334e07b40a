"""Conditional Bias Scan with a Bayesian model of the expectations I-hat.

The weighted model of E[I | C, X] that CBS fits on the non-protected class
becomes a PyMC logistic regression, so the uncertainty of I-hat carries into
the scan: (a) one scan against the posterior mean of I-hat, and (b) one scan
per posterior draw, which gives the posterior distribution of the best score
and, for every attribute value, the posterior probability that it belongs to
the detected subgroup.

What the weights mean here.  The propensity-odds weights w = p/(1-p) make
the non-protected rows resemble the protected class in X (the ATT weighting
of Section 3.2).  In the Bayesian model they enter as a power likelihood,
prod_i p(I_i | eta_i)^(w_i): a pseudo-likelihood, not a generative model of
the reweighted sample.  Its scale is arbitrary (multiplying all weights by 10
would make the posterior 3x narrower), so the weights are normalised to sum
to Kish's effective sample size (sum w)^2 / sum w^2, the number of
independent rows the weighted sample is worth.  The propensity model itself
is a point estimate, so the posterior reflects the uncertainty of the I-hat
model given the weights, not of the weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._plotting import new_axes
from .._repr import compact_repr
from .._result import ResultMixin
from .._validation import SeedLike, check_random_state
from .._vocabulary import moved_options, renamed_arguments
from .cbs import CBSResult, frame_and_roles, scan_pipeline
from .engine import ScanResult, safe_logit, subgroup_mask
from .ihat import fit_weighted, weighted_proba
from .options import MOVED_FROM_POSTERIOR, BayesianIhat, SubsetSearch, check_option

__all__ = ["PosteriorScanResult", "posterior_bias_scan"]

#: Restarts of the search by default (each scanned posterior draw repeats it).
N_RESTARTS = 20


@dataclass
class PosteriorScanResult(ResultMixin):  # numpydoc ignore=PR01
    """Result of :func:`posterior_bias_scan`.

    Attributes
    ----------
    mean_scan : ScanResult
        Scan against the posterior mean of I-hat.
    score_draws : numpy.ndarray
        Best penalised score of the scan against each scanned posterior draw.
    inclusion : pandas.DataFrame
        Tidy table (attribute, value, probability): the posterior probability
        that the value belongs to the detected subgroup (an attribute left
        unrestricted includes all its values).
    subgroup_probability : pandas.Series
        Posterior probability of each distinct detected subgroup, most probable first.
    idata : arviz.InferenceData
        Posterior of the I-hat model's coefficients.
    ihat_draws : numpy.ndarray
        (draws scanned, protected rows) expectations.
    protected_label, scan_type : str
        The protected class in words and the CBS variant.
    """

    __repr__ = compact_repr

    mean_scan: ScanResult
    score_draws: np.ndarray
    inclusion: pd.DataFrame
    subgroup_probability: pd.Series
    idata: object = field(repr=False)
    ihat_draws: np.ndarray = field(repr=False)
    protected_label: str = ""
    scan_type: str = ""

    def summary(self) -> pd.DataFrame:
        """Posterior summary of the best score, beside the scan at the posterior mean.

        Returns
        -------
        pandas.DataFrame
            One row.
        """
        q = np.quantile(self.score_draws, [0.05, 0.25, 0.5, 0.75, 0.95])
        return pd.DataFrame(
            [
                {
                    "scan_type": self.scan_type,
                    "protected": self.protected_label,
                    "subgroup (posterior mean I-hat)": self.mean_scan.describe(),
                    "score (posterior mean I-hat)": self.mean_scan.score,
                    "score median": q[2],
                    "score 5%": q[0],
                    "score 95%": q[4],
                    "most probable subgroup": self.subgroup_probability.index[0],
                    "its probability": self.subgroup_probability.iloc[0],
                    "draws scanned": len(self.score_draws),
                }
            ]
        )

    @renamed_arguments(axes="ax")
    def plot(self, ax=None):
        """Posterior of the best score and the inclusion probability of every value.

        Parameters
        ----------
        ax : pair of matplotlib.axes.Axes, optional
            Draw into them; default a new figure.

        Returns
        -------
        numpy.ndarray of two matplotlib.axes.Axes
        """
        axes = new_axes(ax, figsize=(10, 3.2), count=2)
        ax0, ax1 = axes
        ax0.hist(self.score_draws, bins=30, color="C0", alpha=0.7)
        ax0.axvline(self.mean_scan.score, color="C3", lw=2, label="at posterior mean I-hat")
        ax0.set_xlabel("best penalised score over posterior draws of I-hat")
        ax0.legend(frameon=False, fontsize=8)
        lab = self.inclusion["attribute"] + " = " + self.inclusion["value"].astype(str)
        ax1.barh(lab, self.inclusion["probability"], color="C2")
        ax1.set_xlim(0, 1)
        ax1.set_xlabel("posterior probability in the detected subgroup")
        ax1.invert_yaxis()
        return axes


def _ihat_model(X, W1, W0, names, prior_scale):
    """The weighted I-hat logistic regression as a PyMC model."""
    import pymc as pm

    coords = {"feature": names, "pattern": np.arange(len(X))}
    with pm.Model(coords=coords) as model:
        Xd = pm.Data("X", X, dims=("pattern", "feature"))
        b0 = pm.Normal("intercept", 0.0, prior_scale)
        b = pm.Normal("coef", 0.0, prior_scale, dims="feature")
        eta = b0 + pm.math.dot(Xd, b)
        # weighted (power) log-likelihood of the merged records, see the module docstring
        pm.Potential(
            "weighted_loglik",
            -pm.math.sum(W1 * pm.math.log1pexp(-eta) + W0 * pm.math.log1pexp(eta)),
        )
    return model


def _ihat_layout(X, W1, W0, prior_scale):
    """The same model for the closed-form sampler: ``W1 log s(eta) + W0 log(1 - s(eta))``
    is the binomial log-likelihood of ``W1`` successes in ``W1 + W0`` weighted trials."""
    from ..models._fastlogp import LogisticLayout, separate_unseen_directions

    f = X.shape[1]
    eye = np.eye(f + 1)
    # one indicator per value beside the intercept: the directions no pattern sees (one
    # per attribute, and any value absent from the reference rows) are bounded only by
    # the isotropic prior; sampled as coordinates of their own, NUTS need not walk them
    xf, prior, outputs = separate_unseen_directions(
        np.hstack([np.ones((len(X), 1)), X]),
        np.zeros(f + 1),
        [("intercept", (), eye[:1]), ("coef", ("feature",), eye[1:])],
        (W1 + W0) > 0,
    )
    return LogisticLayout(
        xf,
        W1 + W0,
        W1,
        prior,
        sigma=prior_scale,
        outputs=outputs,
        row_dim="pattern",
        row_outputs=False,
    )


def _pymc_ihat(X, W1, W0, X_new, names, prior_scale, draws, tune, chains, seed):
    from .._sampling import sample_nuts

    idata = sample_nuts(
        lambda: _ihat_model(X, W1, W0, names, prior_scale),
        lambda: _ihat_layout(X, W1, W0, prior_scale).nutpie_model({"feature": names}),
        draws=draws,
        tune=tune,
        chains=chains,
        seed=seed,
    )
    b0 = idata.posterior["intercept"].to_numpy().reshape(-1)
    b = idata.posterior["coef"].to_numpy().reshape(-1, len(names))
    eta_new = b0[:, None] + b @ X_new.T
    return idata, 1.0 / (1.0 + np.exp(-eta_new))


@moved_options(MOVED_FROM_POSTERIOR)
@renamed_arguments(protected="protected_class", n_permutations="n_resamples")
def posterior_bias_scan(
    data: pd.DataFrame,
    *,
    protected_class,
    scan_type: str,
    outcome: str | None = None,
    score: str | None = None,
    decision: str | None = None,
    condition_value: int | None = None,
    direction: str = "positive",
    attributes: Sequence[str] | None = None,
    search: SubsetSearch | None = None,
    ihat: BayesianIhat | None = None,
    random_state: SeedLike = None,
) -> PosteriorScanResult:
    """Conditional Bias Scan against posterior draws of I-hat.

    Takes the question and the search of :func:`conditional_bias_scan` (without
    permutations) with a Bayesian model of I-hat (:class:`~bayesfair.scan.BayesianIhat`:
    Normal(0, ``prior_scale``) priors on the intercept and the coefficients of the I-hat
    logistic regression, NUTS, and the number of posterior draws scanned).  The
    propensity weights are a point estimate, as in the paper.

    Parameters
    ----------
    data : pandas.DataFrame or AuditData
        The rows; an :class:`~bayesfair.AuditData` brings its outcome, score and
        decision (a threshold's decision included) as the defaults of those arguments.
    protected_class : str, (column, value) or {column: value}
    scan_type : str
    outcome, score, decision : str, optional
    condition_value : {None, 0, 1}
    direction : {"positive", "negative"}
    attributes : list of str, optional
        Scan attributes; default every categorical (non-numeric) column except the
        roles and the protected attribute, as in
        :func:`~bayesfair.scan.conditional_bias_scan`.
    search : SubsetSearch, optional
        As in :func:`~bayesfair.scan.conditional_bias_scan`, with 20 restarts by default
        (each scanned draw is one full search).
    ihat : BayesianIhat, optional
        The Bayesian I-hat model, its NUTS settings and the draws scanned.
    random_state : None, int, or numpy SeedSequence, Generator or RandomState, optional

    Returns
    -------
    PosteriorScanResult

    Notes
    -----
    Twelve parameters: the scan's question and role columns, as
    :func:`~bayesfair.scan.conditional_bias_scan` takes them, its ``search`` and the
    Bayesian I-hat model (each an object carrying its own options), and the seed.

    Examples
    --------
    >>> from bayesfair.datasets import make_cbs_semisynthetic
    >>> from bayesfair.scan import BayesianIhat, SubsetSearch, posterior_bias_scan
    >>> ds = make_cbs_semisynthetic(mu_sep=1.5, protected_class=("race", "African-American"),
    ...                             random_state=1)
    >>> res = posterior_bias_scan(ds.frame, protected_class="protected", outcome="y",
    ...                           decision="p_bin", scan_type="separation_recommendations",
    ...                           condition_value=0, attributes=ds.covariates,
    ...                           search=SubsetSearch(n_restarts=5),
    ...                           ihat=BayesianIhat(draws=100, tune=200, n_draws_scanned=20),
    ...                           random_state=0)
    >>> res.mean_scan.describe()  # the injected subgroup is sex = Male; charge = Felony
    'sex = Male; charge = Felony'
    """
    search = check_option(search, SubsetSearch, "search")
    model = check_option(ihat, BayesianIhat, "ihat")
    n_restarts, penalty = search.restarts(N_RESTARTS), search.penalty
    data, outcome, score, decision = frame_and_roles(data, outcome, score, decision)
    roles = {"outcome": outcome, "score": score, "decision": decision}
    A, label, pipe = scan_pipeline(
        data,
        protected_class,
        scan_type,
        roles,
        condition_value,
        direction,
        attributes,
        search,
        model.attributes,
    )
    rng = check_random_state(random_state)

    idata, ihat_all = _posterior_ihat(data, pipe, A, model, rng)
    pick = rng.choice(
        ihat_all.shape[0], size=min(model.n_draws_scanned, ihat_all.shape[0]), replace=False
    )
    ihat_draws = ihat_all[pick]

    mean_prep = pipe.prepared(A, ihat_all.mean(axis=0))
    mask, sc, th, rs = mean_prep.run(n_restarts, penalty, rng)
    mean_scan = mean_prep.result(mask, sc, th, rs, penalty)

    scores, inclusion, sub_prob = _scan_draws(
        pipe, A, mean_prep, ihat_draws, n_restarts, penalty, rng
    )
    return PosteriorScanResult(
        mean_scan=mean_scan,
        score_draws=scores,
        inclusion=inclusion,
        subgroup_probability=sub_prob,
        idata=idata,
        ihat_draws=ihat_draws,
        protected_label=label,
        scan_type=scan_type,
    )


def _posterior_ihat(data, pipe, A, model: BayesianIhat, rng):
    """Posterior draws of I-hat for the protected rows: a Bayesian logistic regression of
    the event on the I-hat attributes (and the condition) fitted to the comparison rows,
    propensity-weighted (a point estimate of the weights, as in the paper) and aggregated
    to one weighted binomial row per covariate pattern; its InferenceData and the draws."""
    # propensity weights (a point estimate, as in the paper)
    gx, gf = pipe.groups
    pm_ = fit_weighted(None, pipe.X_ihat, A.astype(float), np.ones(len(A)), True, gx)
    pa = np.clip(weighted_proba(pm_, pipe.X_ihat), 1e-6, 1 - 1e-6)
    feats = pipe.X_ihat
    names = [f"{c}={v}" for c in pipe.ihat_attributes for v in pipe_values(data, c)]
    if pipe.condition is not None:
        c = safe_logit(pipe.condition) if pipe.cond_is_prob else pipe.condition
        feats = np.column_stack([feats, c])
        names.append("C")
    ref = ~A & pipe.keep
    w = pa[ref] / (1 - pa[ref])
    w = w * (w.sum() / np.sum(w**2))  # sums to Kish's effective sample size
    ev = np.clip(pipe.event[ref], 0.0, 1.0)
    g = gf[ref]
    uniq, first, inv = np.unique(g, return_index=True, return_inverse=True)
    W1 = np.bincount(inv, weights=w * ev, minlength=len(uniq))
    W0 = np.bincount(inv, weights=w * (1 - ev), minlength=len(uniq))
    Xp = feats[ref][first]
    rows = A & pipe.keep
    idata, ihat_all = _pymc_ihat(
        Xp,
        W1,
        W0,
        feats[rows],
        names,
        model.prior_scale,
        model.draws,
        model.tune,
        model.chains,
        int(rng.integers(2**31)),
    )
    return idata, ihat_all


def _scan_draws(pipe, A, mean_prep, ihat_draws, n_restarts: int, penalty: float, rng) -> tuple:
    """One scan per draw of I-hat: the scores, each value's probability of being in the
    flagged subgroup, and each subgroup's probability of being the one flagged."""
    scores = np.empty(len(ihat_draws))
    incl = np.zeros(int(mean_prep.arity.sum()))
    found: dict[str, int] = {}
    for d, ih in enumerate(ihat_draws):
        prep = pipe.prepared(A, ih)
        mk, sc_d, th_d, rs_d = prep.run(n_restarts, penalty, rng)
        scores[d] = sc_d
        incl += mk
        key = prep.result(mk, sc_d, th_d, rs_d, penalty).describe()
        found[key] = found.get(key, 0) + 1
    incl /= len(ihat_draws)
    inclusion = pd.DataFrame(
        [
            {"attribute": a, "value": v, "probability": incl[mean_prep.offsets[j] + i]}
            for j, a in enumerate(mean_prep.attributes)
            for i, v in enumerate(mean_prep.values[a])
        ]
    )
    sub_prob = pd.Series(found, name="probability").sort_values(ascending=False) / len(ihat_draws)
    return scores, inclusion, sub_prob


def pipe_values(data: pd.DataFrame, col: str) -> list:
    """The values of ``col`` in the order of the one-hot columns of the I-hat model."""
    from .engine import row_codes

    return row_codes(data, [col])[1][col]


# keep the names importable for type checkers
_ = (CBSResult, subgroup_mask)
