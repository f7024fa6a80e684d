//! A ClickHouse server of the tests' own (tests/clickhouse.rs, tests/chain.rs): Debian's
//! clickhouse-server (18.16), started as an unprivileged process on free loopback ports,
//! its data, logs and config in a temp directory, killed and removed on drop.

use super::tempdir;
use std::io::Write;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Are clickhouse-server and clickhouse-client installed? `false` (with the reason
/// printed) where they are not, unless `TAPSTAT_REQUIRE_CLICKHOUSE=1`, in which case
/// their absence fails the test.
pub fn clickhouse_ready() -> bool {
    let ok = |cmd: &str, arg: &str| Command::new(cmd).arg(arg).output().is_ok();
    let found = ok("clickhouse-server", "--help") && ok("clickhouse-client", "--version");
    let why = "clickhouse-server or clickhouse-client is missing (Debian packages clickhouse-server clickhouse-client)";
    super::ready(found, "TAPSTAT_REQUIRE_CLICKHOUSE", why)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A clickhouse-server on free loopback ports, its data, logs and config in `dir`.
pub struct Server {
    child: Child,
    pub port: u16,
    pub dir: super::TestDir,
}

impl Server {
    pub fn start(tag: &str) -> Server {
        let dir = tempdir(tag);
        let (tcp, http) = (free_port(), free_port());
        let d = dir.display();
        let config = format!(
            r#"<?xml version="1.0"?>
<yandex>
  <logger><level>information</level><log>{d}/server.log</log><errorlog>{d}/server.err.log</errorlog><console>0</console></logger>
  <listen_host>127.0.0.1</listen_host>
  <tcp_port>{tcp}</tcp_port>
  <http_port>{http}</http_port>
  <path>{d}/data/</path>
  <tmp_path>{d}/tmp/</tmp_path>
  <user_files_path>{d}/user_files/</user_files_path>
  <format_schema_path>{d}/format_schemas/</format_schema_path>
  <users_config>{d}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>268435456</mark_cache_size>
  <!-- librdkafka settings of the Kafka-engine tables: a new consumer group starts at the
       topic's oldest record, not its end (docs/DEPLOYMENT.md, "Kafka ingestion"). -->
  <kafka><auto_offset_reset>smallest</auto_offset_reset></kafka>
</yandex>
"#
        );
        let users = r#"<?xml version="1.0"?>
<yandex>
  <profiles><default></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
"#;
        std::fs::write(dir.join("config.xml"), config).unwrap();
        std::fs::write(dir.join("users.xml"), users).unwrap();
        let child = Command::new("clickhouse-server")
            .arg(format!("--config-file={}", dir.join("config.xml").display()))
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("clickhouse-server starts");
        let mut s = Server { child, port: tcp, dir };
        let t0 = Instant::now();
        loop {
            if s.client(&["-q", "SELECT 1"]).is_ok() {
                break;
            }
            if let Ok(Some(st)) = s.child.try_wait() {
                panic!("clickhouse-server exited ({st}): {}", s.err_log());
            }
            assert!(t0.elapsed() < Duration::from_secs(60), "clickhouse-server not up in 60 s: {}", s.err_log());
            std::thread::sleep(Duration::from_millis(200));
        }
        eprintln!("clickhouse-server up in {:.1} s", t0.elapsed().as_secs_f64());
        s
    }

    pub fn err_log(&self) -> String {
        let t = std::fs::read_to_string(self.dir.join("server.err.log")).unwrap_or_default();
        t.lines().rev().take(20).collect::<Vec<_>>().join("\n")
    }

    /// Runs clickhouse-client with `args`, `input` on its stdin; its stdout, or its stderr as the error.
    pub fn client_in(&self, args: &[&str], input: &[u8]) -> Result<String, String> {
        let mut c = Command::new("clickhouse-client")
            .args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let mut stdin = c.stdin.take().unwrap();
        let input = input.to_vec();
        let w = std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        let o = c.wait_with_output().map_err(|e| e.to_string())?;
        let _ = w.join();
        if o.status.success() {
            Ok(String::from_utf8_lossy(&o.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&o.stderr).into_owned())
        }
    }

    pub fn client(&self, args: &[&str]) -> Result<String, String> {
        self.client_in(args, b"")
    }

    pub fn query(&self, q: &str) -> String {
        self.client(&["-q", q]).unwrap_or_else(|e| panic!("{q}: {e}"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
