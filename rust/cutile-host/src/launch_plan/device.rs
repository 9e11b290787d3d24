//! Which device a launch runs on: the one whose memory its tensors are. A launch runs on
//! one device, so tensors of two devices in one call are refused (CT6113) before anything
//! is moved in; a launch with no tensor runs on the thread's current device.

use super::{Arg, LaunchPlan};
use crate::HostError;

/// CT6113: `what` was given `a`'s tensor on one device and `b`'s on another (`(name,
/// device)` each, in argument order).
pub fn mixed_devices(what: &str, a: (&str, u32), b: (&str, u32)) -> HostError {
    HostError::launch(
        "CT6113",
        format!(
            "{what} takes `{}` on device {} and `{}` on device {}: one launch runs on one \
             device, and reads and writes only that device's memory",
            a.0, a.1, b.0, b.1
        ),
        Some(format!(
            "copy the tensor over first (`{}.to({})` makes a copy on device {}), or run \
             the work where the tensor is",
            b.0, a.1, a.1
        )),
    )
    .with_tensor(b.0)
}

impl LaunchPlan {
    /// The device of every tensor argument of `kernel` (`current` when there is none);
    /// CT6113 naming the first two parameters whose tensors are on different devices.
    pub fn device_of(
        &self,
        kernel: &str,
        args: &[Arg<'_>],
        current: u32,
    ) -> Result<u32, HostError> {
        let mut first: Option<(usize, u32)> = None;
        for (i, a) in args.iter().enumerate() {
            let Arg::Handle(d) = a else { continue };
            match first {
                None => first = Some((i, d.device)),
                Some((j, dev)) if dev != d.device => {
                    let name = |k: usize| self.params.get(k).map_or("?", |p| p.name.as_str());
                    return Err(mixed_devices(
                        &format!("`{kernel}`"),
                        (name(j), dev),
                        (name(i), d.device),
                    )
                    .with_kernel(kernel));
                }
                Some(_) => {}
            }
        }
        Ok(first.map_or(current, |(_, d)| d))
    }
}
