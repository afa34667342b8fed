//! Starting, watching and stopping inference engines. (effects)

pub mod command;
pub mod gpus;
pub mod health;
pub mod launch;
pub mod leftovers;
pub mod process;
pub mod sim;
pub mod startable;

/// Version of the simulated engine's behaviour; part of every `sim` key.
/// Bump it by hand whenever the simulation changes a number.
pub const SIM_ENGINE_VERSION: &str = "1";
