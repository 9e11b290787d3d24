//! A launch runs on the device of its tensors: every tensor on one device is accepted (and
//! picks that device), tensors of two devices are refused naming both, and a launch
//! without tensors runs on the current device.

use super::*;

fn on(d: &TensorDesc, device: u32) -> TensorDesc {
    TensorDesc::new(View {
        device,
        ..d.view.clone()
    })
    .unwrap()
}

#[test]
fn a_launch_runs_on_the_device_of_its_tensors() {
    let plan = add_plan();
    let z = on(&view(1, &[1024], Some(&[128]), "f32"), 1);
    let x = on(&view(2, &[1024], None, "f32"), 1);
    let y = on(&view(3, &[1024], None, "f32"), 1);
    let args = [Arg::Handle(&z), Arg::Handle(&x), Arg::Handle(&y)];
    assert_eq!(plan.device_of("add", &args, 0).unwrap(), 1);
    // no tensor at all: the current device
    assert_eq!(plan.device_of("add", &[Arg::Int(3)], 2).unwrap(), 2);
}

#[test]
fn tensors_of_two_devices_are_refused_naming_both() {
    let plan = add_plan();
    let z = view(1, &[1024], Some(&[128]), "f32");
    let x = view(2, &[1024], None, "f32");
    let y = on(&view(3, &[1024], None, "f32"), 1);
    let e = plan
        .device_of(
            "add",
            &[Arg::Handle(&z), Arg::Handle(&x), Arg::Handle(&y)],
            0,
        )
        .unwrap_err();
    assert_eq!(e.code, "CT6113");
    assert!(
        e.message.contains("`z` on device 0 and `y` on device 1"),
        "{}",
        e.message
    );
    assert_eq!(e.about.tensor.as_deref(), Some("y"));
    assert_eq!(e.about.kernel.as_deref(), Some("add"));
    assert!(e.hint.unwrap().contains("y.to(0)"));
}
