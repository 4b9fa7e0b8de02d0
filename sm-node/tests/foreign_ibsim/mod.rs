//! Helpers of the ibsim tests next to OpenSM (`ibsim_foreign_sm`, `ibsim_foreign_cluster`):
//! watched child processes (log lines read by a thread), OpenSM and our SM on ibsim, sminfo.
#![allow(dead_code)]

use crate::ibsim_common::*;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use umad::testing::Ibsim;

/// Any single wait for a log line.
pub const WAIT: Duration = Duration::from_secs(90);

/// A child process whose log lines (stdout or stderr) are read by a thread, kept in a
/// file and handed over a channel; killed by PID when dropped.
pub struct Watched {
    pub child: Child,
    pub name: String,
    pub rx: mpsc::Receiver<String>,
    pub log: Vec<String>,
    pub path: PathBuf,
}

impl Watched {
    /// Spawns `cmd`, reading its stderr (`stderr` true) or stdout line by line.
    pub fn spawn(mut cmd: Command, name: &str, dir: &Path, stderr: bool) -> Watched {
        if stderr {
            cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        } else {
            cmd.stdout(Stdio::piped()).stderr(Stdio::null());
        }
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {name}: {e}"));
        let out: Box<dyn std::io::Read + Send> = if stderr {
            Box::new(child.stderr.take().expect("piped stderr"))
        } else {
            Box::new(child.stdout.take().expect("piped stdout"))
        };
        let path = dir.join(format!("{name}.log"));
        let (tx, rx) = mpsc::channel();
        let p = path.clone();
        std::thread::spawn(move || {
            let mut file = std::fs::File::create(&p).ok();
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                let line = strip_ansi(&line);
                if let Some(f) = file.as_mut() {
                    let _ = writeln!(f, "{line}");
                }
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Watched {
            child,
            name: name.to_string(),
            rx,
            log: Vec::new(),
            path,
        }
    }

    /// Reads lines until one matches `pred` (returned) or `WAIT` passes (panics with the
    /// log so far).
    pub fn wait_for(&mut self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        if let Some(l) = self.log.iter().find(|l| pred(l)) {
            return l.clone();
        }
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(line) => {
                    self.log.push(line.clone());
                    if pred(&line) {
                        return line;
                    }
                }
                Err(e) => panic!(
                    "{}: no {what} ({e:?}); log so far ({}):\n{}",
                    self.name,
                    self.path.display(),
                    self.log.join("\n")
                ),
            }
        }
    }

    /// Lines read so far plus whatever is already waiting.
    pub fn drain(&mut self) -> &[String] {
        while let Ok(l) = self.rx.try_recv() {
            self.log.push(l);
        }
        &self.log
    }

    /// The first line read so far containing `pat` (panics with `what` when none).
    pub fn seen(&mut self, pat: &str, what: &str) -> String {
        self.drain()
            .iter()
            .find(|l| l.contains(pat))
            .cloned()
            .unwrap_or_else(|| panic!("{what}"))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM by PID, then waits (SIGKILL after `WAIT`); returns the whole log.
    pub fn terminate(mut self) -> Vec<String> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status();
        let _ = umad::testing::wait_deadline(&mut self.child, WAIT);
        let deadline = Instant::now() + Duration::from_secs(10);
        // The reader thread ends at EOF; take what it read.
        while let Ok(l) = self
            .rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            self.log.push(l);
        }
        std::mem::take(&mut self.log)
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// True when `test` can run here (ibsim, the diags and OpenSM; see [`ready`]).
pub fn ready_with_opensm(test: &str) -> bool {
    ready(test, &["opensm"])
}

/// OpenSM at `host`, sweeping every 2 s, log on stdout (flushed per line).
/// `QSM_OPENSM_DEBUG=0xFF` in the environment passes `-D 0xFF` (OpenSM's debug log).
pub fn start_opensm(sim: &Ibsim, host: &str, priority: u8) -> Watched {
    start_opensm_conf(sim, host, priority, "")
}

/// [`start_opensm`] with more lines for its opensm.conf.
pub fn start_opensm_conf(sim: &Ibsim, host: &str, priority: u8, conf_lines: &str) -> Watched {
    let dir = sim.dir().join(format!("opensm-{host}"));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("opensm.conf");
    std::fs::write(&conf, format!("force_log_flush TRUE\n{conf_lines}")).unwrap();
    let mut c = sim.client("opensm", Some(host));
    c.env("OSM_TMP_DIR", &dir)
        .env("OSM_CACHE_DIR", &dir)
        .arg("-F")
        .arg(&conf)
        .args(["-f", "stdout", "-s", "2", "-p", &priority.to_string()]);
    if let Some(d) = std::env::var_os("QSM_OPENSM_DEBUG") {
        c.arg("-D").arg(d);
    }
    Watched::spawn(c, &format!("opensm-{host}"), sim.dir(), false)
}

/// Our SM at `host`, light sweeps (and standby polls) every second.
pub fn start_ours(sim: &Ibsim, host: &str, priority: u8) -> Watched {
    let mut c = sim.client(env!("CARGO_BIN_EXE_sm-node"), Some(host));
    c.args([
        "--fabric",
        "umad:/dev/infiniband/umad0:1",
        "--sweep-interval",
        "1",
        "--priority",
        &priority.to_string(),
    ]);
    Watched::spawn(c, &format!("sm-node-{host}"), sim.dir(), true)
}

/// `sminfo` at `host`: (GUID, priority, state name).
pub fn sminfo(sim: &Ibsim, host: &str) -> (u64, u8, String) {
    let (_, guid, prio, state) = parse_sminfo(&tool(sim, host, "sminfo", &[]));
    (guid, prio, state)
}

/// `sminfo` at Hca3 (reading the SM its port's MasterSMLID names) says MASTER `guid` at
/// `priority`.
pub fn assert_sminfo_master(sim: &Ibsim, guid: u64, priority: u8, why: &str) {
    let (g, p, state) = sminfo(sim, "Hca3");
    assert_eq!(
        (g, p, state.as_str()),
        (guid, priority, "SMINFO_MASTER"),
        "{why}"
    );
}

/// The hex number after `key` in `line`.
pub fn hex_after(line: &str, key: &str) -> u64 {
    let rest = line
        .split_once(key)
        .unwrap_or_else(|| panic!("no {key:?} in {line:?}"))
        .1;
    let h = rest
        .trim_start()
        .trim_start_matches("0x")
        .split(|c: char| !c.is_ascii_hexdigit())
        .next()
        .unwrap_or_default();
    u64::from_str_radix(h, 16).unwrap_or_else(|e| panic!("{key:?} in {line:?}: {e}"))
}

/// The decimal number before `suffix` in `line`.
pub fn num_before(line: &str, suffix: &str) -> u64 {
    let head = line
        .split_once(suffix)
        .unwrap_or_else(|| panic!("no {suffix:?} in {line:?}"))
        .0;
    head.split_whitespace()
        .last()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no number before {suffix:?} in {line:?}"))
}
