//! Round trip over random transfers (sizes up to 2 KB, the shapes of
//! `transfer_props`, coherence off at times so that stale lines are kept,
//! flushes, and machine parameters, a cost entry and coherence options
//! away from their defaults), read misses, pipeline workloads,
//! fetch-and-adds, remaps, sharing workloads, the AM suite's LogP figures
//! and tables on small random platforms, and the cost study likewise: the
//! JSON of a result reads back equal to it, and the configuration it
//! carries measures it again.

use super::transfer_props::config;
use coherence::modes::Mode;
use magic::{Cycles, Time};
use proptest::prelude::*;
use protocols::am::config::PlatformConfig;
use protocols::am::costs::{self, CostsConfig, Delivery, Network};
use protocols::am::suite::{self, logp_config, SuiteConfig};
use protocols::pipeline::{self, Pattern, PipelineConfig, PipelineCosts};
use protocols::transfer::{run, Config, Outcome, SenderState};
use protocols::user::experiments::{
    fetch_op_config as run_fetch_op, remap_config as run_remap, FetchOpConfig, RemapConfig,
    Technique,
};

/// What every result keeps: it carries `c`, the configuration that made
/// it; its JSON reads back equal to it; and the configuration read back
/// gives it again.
fn carries_reads_back_and_reruns<C, R, E: std::fmt::Display>(
    c: &C,
    r: &R,
    config: impl Fn(&R) -> &C,
    rerun: impl Fn(&C) -> Result<R, E>,
) -> Result<(), TestCaseError>
where
    C: PartialEq + std::fmt::Debug,
    R: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    prop_assert_eq!(config(r), c);
    let text = serde_json::to_string(r).unwrap();
    let back: R =
        serde_json::from_str(&text).map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
    prop_assert_eq!(&back, r);
    let again = rerun(config(&back)).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&again, r);
    Ok(())
}

prop_compose! {
    fn small_config()(
        c in config(),
        bytes in 1u64..=2048,
        none in prop::bool::weighted(0.2),
        flush in any::<bool>(),
        mem_first_dword in 10u64..=20,
        net_latency in 10u64..=40,
        pi_out in 4u64..=8,
        send_init in 9u32..=14,
        hints in any::<bool>(),
    ) -> Config {
        let mut c = Config {
            bytes,
            receives: c.receives.min(bytes as u32),
            sends: c.sends.min(bytes as u32),
            flush,
            ..c
        };
        if none && c.sender != SenderState::DirtyRemote {
            c.mode = Mode::None;
            // Fetch strategies are global coherence's alone.
            c.strategy = protocols::transfer::Strategy::Pipelined;
        }
        c.params.mem_first_dword = Cycles(mem_first_dword);
        c.params.net_latency = Cycles(net_latency);
        c.params.pi_out = Cycles(pi_out);
        c.costs.send_init.cycles = send_init;
        c.coherence.hints = hints;
        c
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(64),
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_results_json_reads_back_equal_and_its_config_measures_it_again(c in small_config()) {
        prop_assert!(c.validate().is_ok(), "{c:?}: {:?}", c.validate());
        let o = run(&c).map_err(|e| TestCaseError::fail(format!("{c:?}: {e}")))?;
        let text = serde_json::to_string(&o).unwrap();
        let back: Outcome = serde_json::from_str(&text)
            .map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
        prop_assert_eq!(&back, &o);
        let again = run(&back.config).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&again, &o);
    }
}

prop_compose! {
    /// A read miss on 3 to 8 nodes, its dirty copy at any third node, its
    /// line anywhere in the first megabyte, the machine, the protocol's
    /// options and a cost away from their defaults.
    fn miss_config()(
        case in prop::sample::select(coherence::miss::Case::ALL.to_vec()),
        nodes in 3u32..=8,
        owner in 0u32..8,
        offset in 0u64..(1 << 20),
        net_latency in 10u64..=40,
        mem_first_dword in 10u64..=20,
        requester_acks in any::<bool>(),
        hints in any::<bool>(),
        decode in 2u32..=8,
    ) -> coherence::miss::Config {
        let mut c = coherence::miss::Config {
            case,
            setup: coherence::miss::Setup {
                nodes,
                owner: match case {
                    coherence::miss::Case::RemoteDirty => 2 + owner % (nodes - 2),
                    // Only a dirty line has an owner.
                    _ => 2,
                },
                offset,
            },
            ..Default::default()
        };
        c.params.net_latency = Cycles(net_latency);
        c.params.mem_first_dword = Cycles(mem_first_dword);
        if requester_acks {
            c.coherence.acks = coherence::Acks::Requester;
        }
        c.coherence.hints = hints;
        c.coherence.costs.decode = decode;
        c
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(64),
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_misss_json_reads_back_equal_and_its_config_measures_it_again(c in miss_config()) {
        use coherence::miss::run_config;
        let r = run_config(&c).map_err(|e| TestCaseError::fail(format!("{c:?}: {e}")))?;
        carries_reads_back_and_reruns(&c, &r, |r| &r.config, run_config)?;
    }
}

prop_compose! {
    /// A pipeline workload of 2 to 6 nodes and 1 to 4 messages each, any
    /// pattern, its handlers' costs anywhere from 1 to 40 cycles (the
    /// completion's from 0), within a cycle budget from 10^6 to the most a
    /// run may have.
    fn pipeline_config()(
        nodes in 2u32..=6,
        msgs in 1u32..=4,
        pattern in prop::sample::select(vec![Pattern::Ring, Pattern::Shift, Pattern::Rand]),
        costs in [1u64..=40, 1u64..=40, 1u64..=40, 0u64..=40],
        budget in prop::sample::select(vec![1_000_000, magic::params::DEFAULT_BUDGET.0, magic::params::MAX_BUDGET.0]),
    ) -> PipelineConfig {
        PipelineConfig {
            nodes,
            msgs,
            pattern,
            costs: PipelineCosts {
                setup: Cycles(costs[0]),
                send: Cycles(costs[1]),
                recv: Cycles(costs[2]),
                done: Cycles(costs[3]),
            },
            budget: Cycles(budget),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(64),
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_pipelines_json_reads_back_equal_and_its_config_runs_it_again(c in pipeline_config()) {
        let r = pipeline::run(&c).map_err(|e| TestCaseError::fail(format!("{c:?}: {e}")))?;
        carries_reads_back_and_reruns(&c, &r, |r| &r.config, pipeline::run)?;
    }
}

prop_compose! {
    /// A fetch-and-add at any of nodes 0 to 8, on a machine, and with a
    /// user-layer cost, away from their defaults.
    fn fetch_op_config()(
        target in 0u32..=8,
        net_latency in 10u64..=40,
        mem_first_dword in 10u64..=20,
        receive in 1u32..=16,
        records in 1usize..=8,
    ) -> FetchOpConfig {
        let mut c = FetchOpConfig { target, ..Default::default() };
        c.params.net_latency = Cycles(net_latency);
        c.params.mem_first_dword = Cycles(mem_first_dword);
        c.user.costs.receive = receive;
        c.user.records = records;
        c
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(64),
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_fetch_ops_json_reads_back_equal_and_its_config_measures_it_again(c in fetch_op_config()) {
        let r = run_fetch_op(&c).map_err(|e| TestCaseError::fail(format!("{c:?}: {e}")))?.result();
        carries_reads_back_and_reruns(&c, &r, |r| &r.config, |c| run_fetch_op(c).map(|x| x.result()))?;
    }
}

prop_compose! {
    /// A remap under any technique, on a machine and with user-layer
    /// costs away from their defaults.
    fn remap_config()(
        technique in prop::sample::select(vec![Technique::Holdoff, Technique::Invalidate, Technique::Tlb]),
        net_latency in 10u64..=40,
        mem_first_dword in 10u64..=20,
        line in 2u32..=20,
        receive in 1u32..=16,
    ) -> RemapConfig {
        let mut c = RemapConfig { technique, ..Default::default() };
        c.params.net_latency = Cycles(net_latency);
        c.params.mem_first_dword = Cycles(mem_first_dword);
        c.user.costs.line = line;
        c.user.costs.receive = receive;
        c
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(64),
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_remaps_json_reads_back_equal_and_its_config_measures_it_again(c in remap_config()) {
        let (r, _) = run_remap(&c).map_err(|e| TestCaseError::fail(format!("{c:?}: {e}")))?;
        carries_reads_back_and_reruns(&c, &r, |r| &r.config, |c| run_remap(c).map(|x| x.0))?;
    }
}

prop_compose! {
    /// A sharing workload of 1 to 12 readers, any of them evicting, under
    /// either directory format (a pointer store small enough to reclaim
    /// lists at times), the machine, the protocol's options and a cost
    /// away from their defaults.
    fn sharing_config()(
        readers in 1u32..=12,
        evicting in 0u32..=12,
        dynamic in any::<bool>(),
        pointer_store in 1u32..=16,
        net_latency in 10u64..=40,
        requester_acks in any::<bool>(),
        hints in any::<bool>(),
        decode in 2u32..=8,
    ) -> coherence::sharing::Config {
        let mut c = coherence::sharing::Config {
            sharing: coherence::sharing::Sharing {
                readers,
                evicting: evicting.min(readers),
            },
            ..Default::default()
        };
        c.params.net_latency = Cycles(net_latency);
        if dynamic {
            c.coherence.format = coherence::DirFormat::DynamicPointer;
            c.coherence.pointer_store = pointer_store;
        }
        if requester_acks {
            c.coherence.acks = coherence::Acks::Requester;
        }
        c.coherence.hints = hints;
        c.coherence.costs.decode = decode;
        c
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(64),
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_sharing_runs_json_reads_back_equal_and_its_config_runs_it_again(c in sharing_config()) {
        use coherence::sharing::run_config;
        let r = run_config(&c).map_err(|e| TestCaseError::fail(format!("{c:?}: {e}")))?;
        carries_reads_back_and_reruns(&c, &r, |r| &r.config, run_config)?;
    }
}

prop_compose! {
    /// A platform of the AM suite on 3 or 4 nodes: any of the four, a
    /// layer's cost and a network's (or the machine's) parameter away
    /// from their defaults.
    fn platform_config()(
        kind in 0usize..4,
        nodes in 3u32..=4,
        request in 10u64..=40,
        sp_request in 200u64..=400,
        deliver in 4u32..=12,
        fixed_latency in 40_000u64..=70_000,
        switch_latency in 6_600u64..=26_400,
        net_latency in 10u64..=40,
    ) -> PlatformConfig {
        let mut c = match kind {
            0 => PlatformConfig::cm5(nodes),
            1 => PlatformConfig::cm5_cmaml(nodes),
            2 => PlatformConfig::sp(nodes),
            _ => PlatformConfig::flash(nodes),
        };
        match &mut c {
            PlatformConfig::Cm5 { costs, network, .. }
            | PlatformConfig::Cm5Cmaml { costs, network, .. } => {
                costs.request = request;
                network.fixed_latency = Time(fixed_latency);
            }
            PlatformConfig::Sp { costs, network, .. } => {
                costs.request = sp_request;
                network.switch_latency = Time(switch_latency);
            }
            PlatformConfig::Flash { costs, machine, .. } => {
                costs.deliver = deliver;
                machine.net_latency = Cycles(net_latency);
            }
        }
        c
    }
}

/// Cases of the AM suite's properties: each runs whole benchmarks, so
/// fewer than the others' (`PROPTEST_CASES` raises them).
fn am_cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: am_cases(),
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_logps_json_reads_back_equal_and_its_config_measures_it_again(c in platform_config()) {
        let r = logp_config(&c).map_err(|e| TestCaseError::fail(format!("{c:?}: {e}")))?;
        // The figures are what the counts give, exactly.
        prop_assert_eq!(r.logp.round_trip_us, r.logp.counts.round_trip.us());
        carries_reads_back_and_reruns(&c, &r, |r| &r.config, logp_config)?;
    }

    #[test]
    fn a_suites_json_reads_back_equal_and_its_config_runs_it_again(
        platform in platform_config(),
        benchmark in prop::sample::select(vec![
            "one-to-two", "round-trip", "poll", "traverse", "array-transfer",
            "two-to-one-segments", "swap", "bandwidth", "operations", "interrupt",
        ]),
    ) {
        let interrupt = benchmark == "interrupt";
        let cmaml = matches!(platform, PlatformConfig::Cm5Cmaml { .. });
        let c = SuiteConfig { platform, benchmark: Some(benchmark.to_string()) };
        let r = match suite::run(&c) {
            Err(e) if interrupt && !cmaml => {
                prop_assert!(e.to_string().contains("CMAML"), "{e}");
                return Ok(());
            }
            r => r.map_err(|e| TestCaseError::fail(format!("{c:?}: {e}")))?,
        };
        carries_reads_back_and_reruns(&c, &r, |r| &r.config, suite::run)?;
    }
}

prop_compose! {
    /// A cost study: any protocol and network, up to 64 words in packets
    /// of up to 16 (even for the indefinite protocol; the single packet's
    /// 4 and 4).
    fn costs_config()(
        protocol in prop::sample::select(vec![Delivery::Single, Delivery::Finite, Delivery::Indefinite]),
        network in prop::sample::select(vec![Network::Cm5, Network::Ordered]),
        words in 1u64..=64,
        half in 1u64..=8,
    ) -> CostsConfig {
        let (words, packet_words) = match protocol {
            Delivery::Single => (4, 4),
            Delivery::Finite => (words, 2 * half - 1),
            Delivery::Indefinite => (words, 2 * half),
        };
        CostsConfig { protocol, words, packet_words, network }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(64),
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_cost_studys_json_reads_back_equal_and_its_config_counts_it_again(c in costs_config()) {
        let r = costs::run_config(&c).map_err(|e| TestCaseError::fail(format!("{c:?}: {e}")))?;
        carries_reads_back_and_reruns(&c, &r, |r| &r.config, costs::run_config)?;
    }
}
