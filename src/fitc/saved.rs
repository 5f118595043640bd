//! A fitted FITC model as saved (feature `serde`): the saved form of the inducing-point models
//! (the crate's `inducing` module, `src/inducing/saved.rs`) under FITC's names,
//! `num_pseudo_inputs` and `neg_log_evidence`.

use super::params::FITC;
use super::posterior::FittedFitc;
use crate::inducing::saved_methods;

saved_methods!(FittedFitc, FitcRepr, FITC);
