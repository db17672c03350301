//! A platform of the active-message suite as data: which machine, its
//! nodes, its layer's cost sheet and its network's parameters (FLASH's:
//! its machine and its command interface's sheet). A LogP result and the
//! suite's tables carry it, and it builds the platform they ran on, so a
//! saved result runs again on the same platform.

use super::cm5::{Cm5, Layer, LayerCosts};
use super::flash::{Flash, FlashCosts};
use super::sp::{Sp, SpCosts};
use super::Platform;
use crate::command::CommandCosts;
use crate::Error;
use magic::ni::cm5::Cm5Params;
use magic::ni::sp::SpParams;
use magic::MagicParams;
use serde::{Deserialize, Serialize};

/// A platform of the suite, whole: it builds the platform
/// ([`PlatformConfig::build`]) and reads back as it serializes, its JSON
/// naming the platform under `platform` (`cm5`, `cm5-cmaml`, `sp`,
/// `flash`) beside its nodes and sheets.
///
/// ```
/// use protocols::am::config::PlatformConfig;
/// let c = PlatformConfig::cm5(8);
/// let json = serde_json::to_value(&c).unwrap();
/// assert_eq!(json["platform"], "cm5");
/// assert_eq!(serde_json::from_value::<PlatformConfig>(json).unwrap(), c);
/// assert_eq!(c.build().unwrap().nodes(), 8);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "platform", rename_all = "kebab-case", deny_unknown_fields)]
pub enum PlatformConfig {
    /// The CM-5 with CMAM, polling.
    Cm5 {
        /// Nodes in the partition (2 to 1024).
        nodes: u32,
        /// CMAM's instruction counts (`[costs.cmam]`).
        costs: LayerCosts,
        /// The network interface and data network (`[network.cm5]`).
        network: Cm5Params,
    },
    /// The CM-5 with CMAML, polling (its interrupt-driven reception is the
    /// suite's `interrupt` benchmark).
    Cm5Cmaml {
        /// Nodes in the partition (2 to 1024).
        nodes: u32,
        /// CMAML's instruction counts (`[costs.cmaml]`).
        costs: LayerCosts,
        /// The network interface and data network (`[network.cm5]`).
        network: Cm5Params,
    },
    /// The IBM SP with SP AM.
    Sp {
        /// Nodes in the machine (2 to 512).
        nodes: u32,
        /// SP AM's instruction counts (`[costs.sp]`).
        costs: SpCosts,
        /// The adapters and the switch (`[network.sp]`).
        network: SpParams,
    },
    /// FLASH, Active Messages as MAGIC handlers.
    Flash {
        /// Nodes in the machine (1 to 4096).
        nodes: u32,
        /// The layer's sheet (`[costs.am]`).
        costs: FlashCosts,
        /// The command interface's sheet (`[costs.command]`).
        command: CommandCosts,
        /// The machine (`[machine]`).
        machine: MagicParams,
    },
}

impl PlatformConfig {
    /// The CM-5 with CMAM on `nodes` nodes, its calibrated costs and network.
    pub fn cm5(nodes: u32) -> PlatformConfig {
        PlatformConfig::Cm5 {
            nodes,
            costs: LayerCosts::cmam(),
            network: Cm5Params::default(),
        }
    }

    /// The CM-5 with CMAML on `nodes` nodes, its calibrated costs and network.
    pub fn cm5_cmaml(nodes: u32) -> PlatformConfig {
        PlatformConfig::Cm5Cmaml {
            nodes,
            costs: LayerCosts::cmaml(),
            network: Cm5Params::default(),
        }
    }

    /// The SP with SP AM on `nodes` nodes, its calibrated costs and switch.
    pub fn sp(nodes: u32) -> PlatformConfig {
        PlatformConfig::Sp {
            nodes,
            costs: SpCosts::default(),
            network: SpParams::default(),
        }
    }

    /// FLASH on `nodes` nodes, the layer's default costs and machine.
    pub fn flash(nodes: u32) -> PlatformConfig {
        PlatformConfig::Flash {
            nodes,
            costs: FlashCosts::default(),
            command: CommandCosts::default(),
            machine: MagicParams::default(),
        }
    }

    /// The machine it is one of (the most nodes it may have).
    pub fn machine(&self) -> super::Machines {
        match self {
            PlatformConfig::Cm5 { .. } | PlatformConfig::Cm5Cmaml { .. } => super::Machines::Cm5,
            PlatformConfig::Sp { .. } => super::Machines::Sp,
            PlatformConfig::Flash { .. } => super::Machines::Flash,
        }
    }

    /// Its nodes.
    pub fn nodes(&self) -> u32 {
        match self {
            PlatformConfig::Cm5 { nodes, .. }
            | PlatformConfig::Cm5Cmaml { nodes, .. }
            | PlatformConfig::Sp { nodes, .. }
            | PlatformConfig::Flash { nodes, .. } => *nodes,
        }
    }

    /// The CM-5 partition it is, if it is one (polling).
    pub fn cm5_partition(&self) -> Result<Option<Cm5>, Error> {
        Ok(match *self {
            PlatformConfig::Cm5 {
                nodes,
                costs,
                network,
            } => Some(Cm5::with(nodes, Layer::Cmam, costs, network)?),
            PlatformConfig::Cm5Cmaml {
                nodes,
                costs,
                network,
            } => Some(Cm5::with(nodes, Layer::Cmaml, costs, network)?),
            _ => None,
        })
    }

    /// The platform it describes; an error names the first value out of
    /// range.
    pub fn build(&self) -> Result<Box<dyn Platform>, Error> {
        Ok(match self {
            PlatformConfig::Cm5 {
                nodes,
                costs,
                network,
            } => Box::new(Cm5::with(*nodes, Layer::Cmam, *costs, *network)?),
            PlatformConfig::Cm5Cmaml {
                nodes,
                costs,
                network,
            } => Box::new(Cm5::with(*nodes, Layer::Cmaml, *costs, *network)?),
            PlatformConfig::Sp {
                nodes,
                costs,
                network,
            } => Box::new(Sp::with(*nodes, *costs, *network)?),
            PlatformConfig::Flash {
                nodes,
                costs,
                command,
                machine,
            } => Box::new(Flash::with(*nodes, *costs, *command, machine.clone())?),
        })
    }
}
