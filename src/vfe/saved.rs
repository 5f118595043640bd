//! A fitted VFE model as saved (feature `serde`): FITC's saved form (the crate's `inducing`
//! module, `src/inducing/saved.rs`) under VFE's names, `num_inducing_inputs` and `neg_bound`,
//! plus the trace tr(K_ff − Q_ff) the summary reports.

use super::params::VFE;
use super::posterior::FittedVfe;
use crate::inducing::saved_methods;

saved_methods!(FittedVfe, VfeRepr, VFE, trace: "VFE tr(K_ff − Q_ff)");
