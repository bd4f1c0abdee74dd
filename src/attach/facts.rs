//! The kernel facts that decide what detaching a probe costs, for the result
//! context: whether RCU grace periods are expedited, the preemption model
//! (which RCU flavour waits how long), and IBT (which changes how the kernel
//! patches and checks indirect branch targets).

use serde::{Deserialize, Serialize};

use crate::kernel::{self, ConfigOption};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DetachFacts {
    /// `/sys/kernel/rcu_expedited`: `1` makes synchronize_rcu() expedited.
    pub rcu_expedited: String,
    /// `/sys/kernel/rcu_normal`: `1` makes expedited grace periods normal.
    pub rcu_normal: String,
    /// `none`, `voluntary`, `full`, `lazy` or `rt`, with `dynamic` where the
    /// model can be changed at boot (`preempt=`), as the configuration and
    /// the command line say.
    pub preemption: String,
    /// `on`, `off` (and why), or `unknown`.
    pub ibt: String,
}

impl DetachFacts {
    pub fn gather() -> DetachFacts {
        let read = |path: &str| {
            std::fs::read_to_string(path)
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "unknown".to_string())
        };
        let cmdline = read("/proc/cmdline");
        DetachFacts {
            rcu_expedited: read("/sys/kernel/rcu_expedited"),
            rcu_normal: read("/sys/kernel/rcu_normal"),
            preemption: preemption(&cmdline, &kernel::config),
            ibt: ibt(&cmdline, &kernel::config, &read("/proc/cpuinfo")),
        }
    }
}

fn is_set(config: &dyn Fn(&str) -> ConfigOption, name: &str) -> bool {
    matches!(config(name), ConfigOption::Set(_))
}

/// The preemption model: `preempt=` on the command line wins over the built
/// default where the model is dynamic.
fn preemption(cmdline: &str, config: &dyn Fn(&str) -> ConfigOption) -> String {
    if config("CONFIG_PREEMPT_RT") == ConfigOption::Unknown {
        return "unknown (no kernel configuration)".to_string();
    }
    let built = [
        ("CONFIG_PREEMPT_RT", "rt"),
        ("CONFIG_PREEMPT_LAZY", "lazy"),
        ("CONFIG_PREEMPT", "full"),
        ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
        ("CONFIG_PREEMPT_NONE", "none"),
    ]
    .into_iter()
    .find(|(name, _)| is_set(config, name))
    .map_or("unknown", |(_, model)| model);
    if !is_set(config, "CONFIG_PREEMPT_DYNAMIC") {
        return built.to_string();
    }
    let chosen = cmdline
        .split_whitespace()
        .find_map(|arg| arg.strip_prefix("preempt="))
        .unwrap_or(built);
    format!("{chosen} (dynamic)")
}

/// Indirect Branch Tracking: built in, supported by the CPU, not turned off.
fn ibt(cmdline: &str, config: &dyn Fn(&str) -> ConfigOption, cpuinfo: &str) -> String {
    match config("CONFIG_X86_KERNEL_IBT") {
        ConfigOption::Unknown => return "unknown (no kernel configuration)".to_string(),
        ConfigOption::NotSet => return "off (CONFIG_X86_KERNEL_IBT is not set)".to_string(),
        ConfigOption::Set(_) => {}
    }
    if cmdline.split_whitespace().any(|arg| arg == "ibt=off") {
        return "off (ibt=off)".to_string();
    }
    let cpu_has = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .is_some_and(|l| l.split_whitespace().any(|f| f == "ibt"));
    match cpu_has {
        true => "on".to_string(),
        false => "off (the CPU has no IBT)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(set: &'static [&'static str]) -> impl Fn(&str) -> ConfigOption {
        move |name: &str| match set.contains(&name) {
            true => ConfigOption::Set("y".to_string()),
            false => ConfigOption::NotSet,
        }
    }

    #[test]
    fn the_preemption_model_follows_config_and_command_line() {
        let dynamic = config(&["CONFIG_PREEMPT_NONE", "CONFIG_PREEMPT_DYNAMIC"]);
        assert_eq!(preemption("quiet", &dynamic), "none (dynamic)");
        assert_eq!(preemption("preempt=full", &dynamic), "full (dynamic)");
        assert_eq!(
            preemption("preempt=full", &config(&["CONFIG_PREEMPT_VOLUNTARY"])),
            "voluntary"
        );
    }

    #[test]
    fn ibt_needs_config_cpu_and_no_veto() {
        let on = config(&["CONFIG_X86_KERNEL_IBT"]);
        let flags = "flags\t: fpu ibt sse";
        assert_eq!(ibt("", &on, flags), "on");
        assert_eq!(ibt("ibt=off", &on, flags), "off (ibt=off)");
        assert_eq!(ibt("", &on, "flags\t: fpu"), "off (the CPU has no IBT)");
        assert_eq!(
            ibt("", &config(&[]), flags),
            "off (CONFIG_X86_KERNEL_IBT is not set)"
        );
    }
}
