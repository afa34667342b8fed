//! Starting, watching and stopping inference engines. (effects)

pub mod gpus;
pub mod health;
pub mod launch;
pub mod leftovers;
pub mod process;
pub mod sim;
