//! Test harness for ibsim: start a simulator on a topology file with its PID recorded, run
//! clients (our own binaries, this test binary re-executed, infiniband-diags tools, OpenSM)
//! under `LD_PRELOAD=libumad2sim.so`, and stop everything by PID, clients first.
//!
//! Rules this module follows (learned running ibsim 0.10 here):
//! - every simulator gets its own `IBSIM_SOCKNAME` (abstract unix sockets `@NAME:ctl`,
//!   `@NAME:out0..9`) and its own scratch directory; clients run with that directory as
//!   their working directory because umad2sim writes its fake sysfs under `./sys-<pid>/`;
//! - ibsim runs with `-n` (no console: at EOF of stdin it would spin at 100% CPU), is not
//!   wrapped in GNU `timeout` (which signals the whole process group) and is killed by PID;
//! - a client started before ibsim listens sleeps 2 s and retries; [`Ibsim::start`] waits
//!   until `/proc/net/unix` shows all its sockets;
//! - a client whose ibsim has gone hangs on exit: [`Ibsim::run`] waits with a deadline and
//!   kills the client by PID, and [`Ibsim`] is stopped only after its clients;
//! - `LD_PRELOAD` must be set before a process starts, so a test that drives
//!   [`crate::UmadPort`] in-process re-executes its own test binary filtered to itself
//!   ([`Ibsim::self_client`], [`child_role`]);
//! - programs (ibsim, OpenSM, the diags) are found by the tests' one lookup,
//!   [`testenv::find_tool`] (PATH, then /usr/sbin and /sbin), and a test without them says
//!   so through [`require_ibsim`] / [`testenv::require`] (a failure under `CI=true`).
//!
//! This module does IO and spawns processes; it is meant for tests and benches.

use fabric::Topology;
use fabric::netfile::{self, IbsimLimits};
use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Environment variable giving a re-executed client the console FIFO of its ibsim.
pub const CONSOLE_ENV: &str = "UMAD_TEST_CONSOLE";
/// umad2sim as Debian's libumad2sim0 installs it.
pub const UMAD2SIM_LIB: &str = testenv::UMAD2SIM_LIB;
/// The example fabric with two switches, two paths between them and four HCAs.
pub const NET_2SW2PATH4HCA: &str = "/usr/share/doc/ibsim-utils/net-examples/net.2sw2path4hca";
/// Environment variable telling a re-executed test binary which test runs as the client.
pub const CHILD_ENV: &str = "UMAD_TEST_CHILD";
/// Environment variable keeping the scratch directories (for debugging).
pub const KEEP_ENV: &str = "UMAD_TEST_KEEP";
/// The umad device umad2sim serves (it fakes exactly one, `umad0`).
pub const SIM_DEVICE: &str = "/dev/infiniband/umad0";

/// ibsim's client limit.
const IBSIM_MAX_CLIENTS: u32 = 10;

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// True when ibsim and umad2sim are installed; otherwise test `test` is reported through
/// [`testenv::skip`]: it fails under `CI=true`, else it prints `SKIPPED: ...` and the caller
/// returns. Tools beyond ibsim are asked for with [`testenv::require`].
pub fn require_ibsim(test: &str) -> bool {
    testenv::require(test, ["ibsim"]).is_some()
        && testenv::require_files(test, &[UMAD2SIM_LIB, NET_2SW2PATH4HCA])
}

/// `program` by full path when it is a bare name the tool lookup finds (PATH, /usr/sbin,
/// /sbin); otherwise as given (spawning it then reports what is wrong).
fn program_path(program: &OsStr) -> PathBuf {
    program
        .to_str()
        .and_then(testenv::find_tool)
        .unwrap_or_else(|| PathBuf::from(program))
}

/// True when this process was re-executed as the client of the test
/// named `test_name` (see [`Ibsim::self_client`]).
pub fn child_role(test_name: &str) -> bool {
    std::env::var(CHILD_ENV).is_ok_and(|v| v == test_name)
}

/// What a finished client printed.
#[derive(Debug)]
pub struct Output {
    /// Exit status.
    pub status: ExitStatus,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Output {
    /// True when the client exited with status 0.
    pub fn success(&self) -> bool {
        self.status.success()
    }

    /// Status, stdout and stderr, for assertion messages.
    pub fn describe(&self) -> String {
        format!(
            "status {}\n--- stdout\n{}\n--- stderr\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

/// Waits for `child` until `timeout`; kills it by PID (SIGKILL) when the time is up and
/// reports `TimedOut`.
pub fn wait_deadline(child: &mut Child, timeout: Duration) -> io::Result<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(s) = child.try_wait()? {
            return Ok(s);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("pid {} still running after {timeout:?}; killed", child.id()),
            ));
        }
        // Polling a child's exit, not synchronising on time.
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A running ibsim, killed by PID on [`Ibsim::stop`] or drop.
pub struct Ibsim {
    child: Option<Child>,
    sockname: String,
    dir: PathBuf,
    netfile: PathBuf,
    console: Option<PathBuf>,
}

fn mkfifo(path: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::other("FIFO path contains NUL"))?;
    // SAFETY: c is a valid NUL-terminated path.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl Ibsim {
    /// Starts `ibsim -s -n EXTRA... NETFILE` with a fresh socket name and scratch directory,
    /// and waits (up to 20 s) until its control and data sockets exist.
    pub fn start(netfile: &Path, extra_args: &[String]) -> io::Result<Ibsim> {
        Ibsim::spawn(netfile, extra_args, false)
    }

    /// Like [`Ibsim::start`] but with ibsim's console on: its stdin is a FIFO
    /// ([`Ibsim::console_path`]) that ibsim itself holds open for writing too, so it never
    /// sees EOF; write commands with [`Ibsim::console`] or by opening the FIFO (a client
    /// process can do that itself).
    pub fn start_with_console(netfile: &Path, extra_args: &[String]) -> io::Result<Ibsim> {
        Ibsim::spawn(netfile, extra_args, true)
    }

    fn spawn(netfile: &Path, extra_args: &[String], console: bool) -> io::Result<Ibsim> {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let sockname = format!("qsm-umad-{}-{n}", std::process::id());
        let dir = std::env::temp_dir().join(&sockname);
        std::fs::create_dir_all(&dir)?;
        let log = std::fs::File::create(dir.join("ibsim.log"))?;
        let mut cmd = Command::new(program_path(OsStr::new("ibsim")));
        cmd.arg("-s");
        let console_path = dir.join("console");
        if console {
            mkfifo(&console_path)?;
            // O_RDWR on a FIFO never blocks on Linux and keeps a writer alive.
            let fifo = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&console_path)?;
            cmd.stdin(fifo);
        } else {
            cmd.arg("-n").stdin(Stdio::null());
        }
        let child = cmd
            .args(extra_args)
            .arg(netfile)
            .env("IBSIM_SOCKNAME", &sockname)
            .current_dir(&dir)
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        let mut sim = Ibsim {
            child: Some(child),
            sockname,
            dir,
            netfile: netfile.to_path_buf(),
            console: console.then_some(console_path),
        };
        sim.wait_ready(Duration::from_secs(20))?;
        Ok(sim)
    }

    /// Writes `topo` as a topology file into a scratch directory and starts ibsim on it,
    /// with size flags when ibsim's defaults are too small.
    pub fn start_topology(topo: &Topology) -> io::Result<Ibsim> {
        let text = netfile::write(topo).map_err(|e| io::Error::other(e.to_string()))?;
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("qsm-umad-net-{}-{n}.net", std::process::id()));
        std::fs::write(&path, text)?;
        let limits = IbsimLimits::of(topo);
        let args = if limits.exceed_defaults() {
            limits.args()
        } else {
            Vec::new()
        };
        let sim = Ibsim::start(&path, &args);
        if let Ok(s) = &sim {
            // Keep the file with the simulator's scratch directory.
            let kept = s.dir.join("topology.net");
            if std::fs::rename(&path, &kept).is_ok() {
                let mut s2 = sim?;
                s2.netfile = kept;
                return Ok(s2);
            }
        }
        sim
    }

    fn wait_ready(&mut self, timeout: Duration) -> io::Result<()> {
        let deadline = Instant::now() + timeout;
        let wanted: Vec<String> = std::iter::once(format!("@{}:ctl", self.sockname))
            .chain((0..IBSIM_MAX_CLIENTS).map(|i| format!("@{}:out{i}", self.sockname)))
            .collect();
        loop {
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait()?
            {
                return Err(io::Error::other(format!(
                    "ibsim exited with {status} before listening: {}",
                    self.log()
                )));
            }
            let table = std::fs::read_to_string("/proc/net/unix")?;
            let ready = wanted.iter().all(|w| {
                table.lines().any(|l| {
                    l.split_whitespace()
                        .last()
                        .is_some_and(|n| n.trim_end_matches('@') == w)
                })
            });
            if ready {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("ibsim not listening after {timeout:?}: {}", self.log()),
                ));
            }
            // Polling the socket table, not synchronising on time.
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// ibsim's PID.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The `IBSIM_SOCKNAME` of this instance.
    pub fn sockname(&self) -> &str {
        &self.sockname
    }

    /// The scratch directory (clients' working directory).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The topology file ibsim was started on.
    pub fn netfile(&self) -> &Path {
        &self.netfile
    }

    /// The console FIFO, when started with [`Ibsim::start_with_console`].
    pub fn console_path(&self) -> Option<&Path> {
        self.console.as_deref()
    }

    /// Sends one console command (e.g. `Unlink "Switch1"[2]`, `ReLink "Switch1"[2]`).
    pub fn console(&self, command: &str) -> io::Result<()> {
        let path = self
            .console
            .as_ref()
            .ok_or_else(|| io::Error::other("ibsim was started without a console"))?;
        write_console(path, command)
    }

    /// What ibsim printed so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("ibsim.log")).unwrap_or_default()
    }

    /// A command for `program` attached to this simulator: `LD_PRELOAD` of umad2sim,
    /// `IBSIM_SOCKNAME`, `SIM_HOST` when given (the node the client attaches at; ibsim's
    /// default is the first node of the file), and the scratch directory as working
    /// directory.
    /// A bare program name is found by the tool lookup ([`testenv::find_tool`]).
    pub fn client(&self, program: impl AsRef<OsStr>, sim_host: Option<&str>) -> Command {
        let mut c = Command::new(program_path(program.as_ref()));
        c.env("LD_PRELOAD", UMAD2SIM_LIB)
            .env("IBSIM_SOCKNAME", &self.sockname)
            .current_dir(&self.dir)
            .stdin(Stdio::null());
        match sim_host {
            Some(h) => c.env("SIM_HOST", h),
            None => c.env_remove("SIM_HOST"),
        };
        c
    }

    /// Runs `cmd` to completion with stdout/stderr captured through files (no pipe can
    /// fill up), killing it by PID after `timeout`.
    pub fn run(&self, mut cmd: Command, timeout: Duration) -> io::Result<Output> {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let out_path = self.dir.join(format!("client-{n}.out"));
        let err_path = self.dir.join(format!("client-{n}.err"));
        cmd.stdout(std::fs::File::create(&out_path)?)
            .stderr(std::fs::File::create(&err_path)?);
        let mut child = cmd.spawn()?;
        let status = wait_deadline(&mut child, timeout);
        let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
        let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
        match status {
            Ok(status) => Ok(Output {
                status,
                stdout,
                stderr,
            }),
            Err(e) => Err(io::Error::new(
                e.kind(),
                format!("{e}\n--- stdout\n{stdout}\n--- stderr\n{stderr}"),
            )),
        }
    }

    /// Runs an infiniband-diags tool (or any program) attached at `sim_host`.
    pub fn run_tool(
        &self,
        program: &str,
        args: &[&str],
        sim_host: Option<&str>,
        timeout: Duration,
    ) -> io::Result<Output> {
        let mut c = self.client(program, sim_host);
        c.args(args);
        self.run(c, timeout)
    }

    /// Runs one OpenSM sweep to SUBNET UP (`opensm -e -f LOG -s 0 -o`) attached at
    /// `sim_host`, with its temporary and cache files in the scratch directory.
    pub fn run_opensm(&self, sim_host: Option<&str>, timeout: Duration) -> io::Result<Output> {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let osm = self.dir.join(format!("opensm-{n}"));
        std::fs::create_dir_all(&osm)?;
        let mut c = self.client("opensm", sim_host);
        c.env("OSM_TMP_DIR", &osm)
            .env("OSM_CACHE_DIR", &osm)
            .arg("-e")
            .arg("-f")
            .arg(osm.join("osm.log"))
            .args(["-s", "0", "-o"]);
        self.run(c, timeout)
    }

    /// A command re-executing the current test binary as the client of test `test_name`
    /// (exact filter, one thread, output not captured), with [`CHILD_ENV`] set so that the
    /// test body knows it is the client ([`child_role`]). Check that the child's stdout
    /// says `1 passed` (a filter that matched nothing also exits 0).
    pub fn self_client(&self, test_name: &str, sim_host: Option<&str>) -> io::Result<Command> {
        let exe = std::env::current_exe()?;
        let mut c = self.client(exe, sim_host);
        c.args([test_name, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, test_name)
            .env("UMAD_TEST_NETFILE", &self.netfile);
        if let Some(p) = &self.console {
            c.env(CONSOLE_ENV, p);
        }
        Ok(c)
    }

    /// Kills ibsim by PID and removes the scratch directory (kept when [`KEEP_ENV`] is
    /// set). Stop every client first.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if std::env::var_os(KEEP_ENV).is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

impl Drop for Ibsim {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Writes one command line to an ibsim console FIFO (from a parent or a client).
pub fn write_console(fifo: &Path, command: &str) -> io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).open(fifo)?;
    f.write_all(format!("{command}\n").as_bytes())
}

/// Whether a test binary run passed exactly one test (guards against an exact filter
/// that matched nothing).
pub fn one_test_passed(out: &Output) -> bool {
    out.success() && out.stdout.contains("1 passed")
}
