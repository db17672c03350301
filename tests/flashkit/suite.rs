//! The benchmark suite's tables, per platform, as people read them.

use crate::common;

use protocols::am::cm5::{Cm5, Layer, Reception};
use protocols::am::suite;

fn tables(p: &dyn protocols::am::Platform) -> String {
    let mut out = String::new();
    for b in suite::BENCHMARKS {
        for t in suite::table(p, b).unwrap() {
            out.push_str(&t.to_string());
            out.push('\n');
        }
    }
    out
}

#[test]
fn cm5_suite() {
    let p = Cm5::new(64, Layer::Cmam);
    common::insta_settings().bind(|| insta::assert_snapshot!("suite_cm5", tables(&p)));
}

#[test]
fn cm5_cmaml_suite() {
    let p = Cm5::new(64, Layer::Cmaml);
    let mut out = tables(&p);
    let mut stock = p.clone();
    stock.reception = Reception::Interrupts { fast: false };
    let mut fast = p.clone();
    fast.reception = Reception::Interrupts { fast: true };
    out.push_str(&suite::interrupt_table(&stock, &fast).unwrap().to_string());
    common::insta_settings().bind(|| insta::assert_snapshot!("suite_cm5_cmaml", out));
}

#[test]
fn sp_suite() {
    let p = protocols::am::sp::Sp::new(16);
    common::insta_settings().bind(|| insta::assert_snapshot!("suite_sp", tables(&p)));
}

#[test]
fn flash_suite() {
    let p = protocols::am::flash::Flash::new(16);
    common::insta_settings().bind(|| insta::assert_snapshot!("suite_flash", tables(&p)));
}
