//! How to go on after an error, in one place for both front ends: each error Hamlet knows
//! (a recording that will not open, a store that refuses, a step left part way, a model
//! call that failed) names what to do next.

/// The model call's error inside `cause`, where a run or a call wraps one.
fn gateway_error<'a>(
    cause: &'a (dyn std::error::Error + 'static),
) -> Option<&'a hamlet_gateway::GatewayError> {
    use crate::mind::think::ThinkError;
    use crate::sim::SimError;
    let think = |t: &'a ThinkError| match t {
        ThinkError::Gateway(g) => Some(g),
        _ => None,
    };
    cause
        .downcast_ref::<hamlet_gateway::GatewayError>()
        .or_else(|| cause.downcast_ref::<ThinkError>().and_then(think))
        .or_else(|| match cause.downcast_ref::<SimError>() {
            Some(SimError::Think(t)) => think(t),
            _ => None,
        })
}

/// What a person can do about `error`, one hint per cause in its chain that Hamlet knows,
/// in order, without repeats: the CLI prints them as `hint:` lines, the window shows the
/// first beside the message.
pub fn hints(error: &(dyn std::error::Error + 'static)) -> Vec<String> {
    use crate::store::StoreError;
    use hamlet_log::format::FooterError;
    use hamlet_log::recording::OpenError;
    let mut out = Vec::new();
    let chain = std::iter::successors(Some(error), |e| e.source());
    for cause in chain {
        if let Some(e) = cause.downcast_ref::<OpenError>() {
            match e {
                OpenError::Footer(FooterError::NoEndMagic | FooterError::TooShort { .. }) => out.push(
                    "the file looks cut short: `hamlet recover FILE --out FIXED` keeps every complete chunk".into(),
                ),
                _ => out.push("`hamlet verify FILE` lists every problem; `hamlet recover` keeps what is sound".into()),
            }
        }
        // (`OpsError::Store` is transparent: the chain goes on past the store's error.)
        let store_error = cause.downcast_ref::<StoreError>().or(match cause.downcast_ref() {
            Some(crate::ops::OpsError::Store(e)) => Some(e),
            _ => None,
        });
        if let Some(e) = store_error {
            match e {
                StoreError::NotSound { .. } => out.push(
                    "`hamlet verify FILE` lists the problems; `hamlet recover FILE --out FIXED` keeps the sound prefix".into(),
                ),
                StoreError::NoBranch(_) | StoreError::NameTaken(_) => {
                    out.push("`hamlet branches --store DIR` lists the branches".into())
                }
                StoreError::Corrupt { .. } => out.push(
                    "export what is readable with `hamlet export`, or restore the segment from a copy".into(),
                ),
                StoreError::Poisoned { .. } => out.push("run the command again: reopening the store recovers".into()),
                StoreError::Index(_) => out.push("`hamlet store rebuild --store DIR` rebuilds the index from the segments".into()),
                StoreError::NoStore { .. } => out.push("`hamlet run --store DIR` or `hamlet import FILE --store DIR` makes a store".into()),
                StoreError::InUse { .. } => out.push("wait for the other command (a run, the viewer) to end, or read a copy of the store".into()),
                _ => {}
            }
        }
        if let Some(crate::ops::OpsError::MidStep) = cause.downcast_ref() {
            out.push(
                "`hamlet run --resume --store DIR --branch NAME --hours H` finishes the step \
                 under way (H: no more hours than the run has gone)"
                    .into(),
            );
        }
        if let Some(hint) = gateway_error(cause).and_then(|e| e.hint()) {
            out.push(hint.to_owned());
        }
        if let Some(e) = cause.downcast_ref::<std::io::Error>() {
            if e.kind() == std::io::ErrorKind::NotFound {
                out.push("check the path; recordings end in .hamlet".into());
            }
        }
    }
    out.dedup();
    out
}
