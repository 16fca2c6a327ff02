//! A seamless measurement → the profile model its exports and diffs read: the model
//! [`Seamless::build`] made, the one its listings read too, as an export sees it.

use profile_model::{MergeOptions, Profile, ProfileBuilder};

use crate::gprof_view::HISTOGRAM;
use crate::labeled::Seamless;

/// The profile model of a seamless profile, for exports and diffs: [`Seamless::model`]
/// without what only the gprof listings read.
///
/// Each function of the merge is a model function with its listing label (`read`, labelled
/// `137u`, user side; `ksys_read` labelled `137k`, kernel side; the system-wide `kernel` and
/// `other` are kernel side), so exports name functions as the listings do and mark kernel
/// frames; samples are labelled with their process's pid and command name. With sampled
/// stacks (built with [`crate::SeamlessOptions::stacks`]), the samples are the stacks, and
/// `off-cpu` in nanoseconds, when the measurement recorded `pkgmon --blocking`, where the
/// system calls slept, so that `--value off-cpu` exports the blocked time as any other
/// profile; the histograms ([`HISTOGRAM`]) and the arcs (sampled edges that the stacks
/// already hold) are left out. Without stacks (a measurement that has no stacks files), the
/// histograms and arcs are the model, as [`crate::gmon_model`] has them.
pub fn measurement_model(seamless: &Seamless) -> Profile {
    export_view(&seamless.model)
}

/// A seamless model (one measurement's, or a sum of several: [`crate::sum_seamless_models`])
/// as exports see it; see [`measurement_model`].
pub fn export_view(model: &Profile) -> Profile {
    let Some(histogram) = model.find_value_type(HISTOGRAM) else {
        return model.clone();
    };
    let mut options = MergeOptions::default();
    options.value_types = Some(
        (model.value_types())
            .map(|(vt, _)| vt)
            .filter(|&vt| vt != histogram)
            .collect(),
    );
    options.arcs = false;
    let mut b = ProfileBuilder::new();
    b.add_profile(model, &options);
    b.build()
}
