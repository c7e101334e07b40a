"""Fairness metrics: the array core (epsilon-DF, gamma-SF), empirical estimates, group rates
and the intervals of rates and of their differences."""

from .empirical import FairnessEstimate, bias_amplification, empirical_fairness
from .fairness import (
    df_bias_amplification,
    epsilon_df,
    epsilon_df_argmax,
    gamma_sf,
    gamma_sf_argmax,
    outcome_probabilities,
    sf_bias_amplification,
)
from .rate_intervals import (
    jeffreys_difference,
    jeffreys_interval,
    newcombe_difference,
    posterior_probability_higher,
    wilson_interval,
)
from .rates import RATE_ALIASES, RATE_DEFINITIONS, group_auc, group_rates

__all__ = [
    "RATE_ALIASES",
    "RATE_DEFINITIONS",
    "FairnessEstimate",
    "bias_amplification",
    "df_bias_amplification",
    "empirical_fairness",
    "epsilon_df",
    "epsilon_df_argmax",
    "gamma_sf",
    "gamma_sf_argmax",
    "group_auc",
    "group_rates",
    "jeffreys_difference",
    "jeffreys_interval",
    "newcombe_difference",
    "outcome_probabilities",
    "posterior_probability_higher",
    "sf_bias_amplification",
    "wilson_interval",
]
