//! Round trip over random transfers (sizes up to 2 KB, the shapes of
//! `transfer_props`, coherence off at times so that stale lines are kept,
//! flushes, and machine parameters, a cost entry and coherence options
//! away from their defaults), read misses, pipeline workloads,
//! fetch-and-adds, remaps and sharing workloads likewise: the JSON of a
//! result reads back equal to it, and the configuration it carries
//! measures it again.

use super::transfer_props::config;
use coherence::modes::Mode;
use magic::Cycles;
use proptest::prelude::*;
use protocols::pipeline::{self, Pattern, PipelineConfig, PipelineCosts, PipelineRun};
use protocols::transfer::{run, Config, Outcome, SenderState};
use protocols::user::experiments::{
    fetch_op_config as run_fetch_op, remap_config as run_remap, FetchOpConfig, FetchOpResult,
    RemapConfig, RemapResult, Technique,
};

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
                owner: 2 + owner % (nodes - 2),
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
        use coherence::miss::{run_config, MissRun};
        let r = run_config(&c).map_err(|e| TestCaseError::fail(format!("{c:?}: {e}")))?;
        prop_assert_eq!(&r.config, &c);
        let text = serde_json::to_string(&r).unwrap();
        let back: MissRun = serde_json::from_str(&text)
            .map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
        prop_assert_eq!(&back, &r);
        let again = run_config(&back.config).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&again, &r);
    }
}

prop_compose! {
    /// A pipeline workload of 2 to 6 nodes and 1 to 4 messages each, any
    /// pattern, its handlers' costs anywhere from 0 to 40 cycles, within
    /// a cycle budget from 10^6 to the most a run may have.
    fn pipeline_config()(
        nodes in 2u32..=6,
        msgs in 1u32..=4,
        pattern in prop::sample::select(vec![Pattern::Ring, Pattern::Shift, Pattern::Rand]),
        costs in [0u64..=40, 0u64..=40, 0u64..=40, 0u64..=40],
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
        prop_assert_eq!(r.config, c);
        let text = serde_json::to_string(&r).unwrap();
        let back: PipelineRun = serde_json::from_str(&text)
            .map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
        prop_assert_eq!(&back, &r);
        let again = pipeline::run(&back.config).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&again, &r);
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
        prop_assert_eq!(&r.config, &c);
        let text = serde_json::to_string(&r).unwrap();
        let back: FetchOpResult = serde_json::from_str(&text)
            .map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
        prop_assert_eq!(&back, &r);
        let again = run_fetch_op(&back.config).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&again.result(), &r);
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
        prop_assert_eq!(&r.config, &c);
        let text = serde_json::to_string(&r).unwrap();
        let back: RemapResult = serde_json::from_str(&text)
            .map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
        prop_assert_eq!(&back, &r);
        let (again, _) = run_remap(&back.config).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&again, &r);
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
        use coherence::sharing::{run_config, SharingRun};
        let r = run_config(&c).map_err(|e| TestCaseError::fail(format!("{c:?}: {e}")))?;
        prop_assert_eq!(&r.config, &c);
        let text = serde_json::to_string(&r).unwrap();
        let back: SharingRun = serde_json::from_str(&text)
            .map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
        prop_assert_eq!(&back, &r);
        let again = run_config(&back.config).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&again, &r);
    }
}
