//! A profile's `credential_process`, as botocore's `ProcessProvider` runs it: the line
//! split as a POSIX shell splits words (`shlex`, no shell: no `$`, `|` or `;`), run
//! with stdin inherited and stdout and stderr read, and its stdout taken as
//! `{"Version": 1, "AccessKeyId", "SecretAccessKey", "SessionToken"?, "Expiration"?}`.
//! A non-zero exit is an error with its stderr.
//!
//! Bounded as the HTTP sources are, though more loosely (a helper may ask for an MFA
//! code on the terminal): after [`TIMEOUT`] the command is killed. What it printed is
//! untrusted text: escaped and cut short before it reaches an error.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::super::cert::Credentials;
use super::super::text;
use super::super::time::UtcTime;
use super::remote::from_json;

/// How long the command may take.
pub const TIMEOUT: Duration = Duration::from_secs(60);
/// The most of its stdout or stderr read: credentials are a few kilobytes.
const MAX_OUTPUT: u64 = 1 << 20;

/// Runs `line` and reads its credentials; the error is one line.
pub fn run(line: &str, timeout: Duration) -> Result<(Credentials, Option<UtcTime>), String> {
    let words = shlex::split(line)
        .filter(|w| !w.is_empty())
        .ok_or_else(|| {
            format!(
                "credential_process {}: not a command line",
                text::shown(line.as_bytes())
            )
        })?;
    let shown = text::shown(words[0].as_bytes());
    let mut child = Command::new(&words[0])
        .args(&words[1..])
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("credential_process {shown}: {}", text::error(&e)))?;
    let reader = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            if let Some(r) = r {
                let _ = r.take(MAX_OUTPUT).read_to_end(&mut out);
            }
            out
        })
    };
    let stdout = reader(child.stdout.take().map(|s| Box::new(s) as _));
    let stderr = reader(child.stderr.take().map(|s| Box::new(s) as _));
    let status =
        wait(&mut child, timeout).map_err(|e| format!("credential_process {shown}: {e}"))?;
    let (stdout, stderr) = (
        stdout.join().unwrap_or_default(),
        stderr.join().unwrap_or_default(),
    );
    if !status.success() {
        return Err(format!(
            "credential_process {shown}: {status}: {}",
            text::shown(stderr.trim_ascii())
        ));
    }
    let v: Value = serde_json::from_slice(&stdout).map_err(|e| {
        format!(
            "credential_process {shown}: output is not JSON: {}",
            text::error(&e)
        )
    })?;
    if v.get("Version") != Some(&Value::from(1)) {
        return Err(format!(
            "credential_process {shown}: output's Version is {}, not 1",
            text::shown(
                v.get("Version")
                    .map(Value::to_string)
                    .unwrap_or("missing".into())
                    .as_bytes()
            )
        ));
    }
    from_json(&stdout, "SessionToken", &[]).map_err(|e| format!("credential_process {shown}: {e}"))
}

/// Waits for `child`, killing it (and reaping it) after `timeout`.
fn wait(child: &mut Child, timeout: Duration) -> Result<std::process::ExitStatus, String> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer within {} s, killed", timeout.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(text::error(&e)),
        }
    }
}
