use coherence::miss::{self, Case};
use coherence::CohParams;
use magic::MagicParams;

#[test]
fn print_latencies() {
    for c in Case::ALL {
        let r = miss::run(c, MagicParams::default(), CohParams::default()).unwrap();
        println!(
            "{} {} value ok {}",
            c.name(),
            r.latency,
            r.value == r.expected
        );
        println!("{}", r.machine.ledger().render());
    }
}
