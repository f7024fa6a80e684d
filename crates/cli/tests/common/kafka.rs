//! An Apache Kafka broker of the tests' own (tests/kafka.rs, tests/chain.rs): Kafka 4.1
//! in KRaft mode (broker and controller in one JVM, three partitions a topic) from Maven
//! Central's jars (`scripts/kafka_jars.sh`, cached under the target directory), started
//! on free loopback ports and killed and removed on drop.

use super::{corpus, dev_captures, tempdir};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The broker's jars (fetched once per test process), or `None` (with the reason
/// printed) where Java or Maven is missing, unless `TAPSTAT_REQUIRE_KAFKA=1`.
pub fn jars() -> Option<&'static Path> {
    static JARS: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let r = JARS.get_or_init(|| {
        let ok = |cmd: &str, arg: &str| Command::new(cmd).arg(arg).output().is_ok_and(|o| o.status.success());
        if !ok("java", "-version") {
            return Err("java is not installed (Debian package openjdk-17-jre-headless)".into());
        }
        let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kafka-jars");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kafka_jars.sh");
        let t0 = Instant::now();
        let o = Command::new("bash").arg(&script).arg(&cache).output().map_err(|e| format!("{script:?}: {e}"))?;
        if !o.status.success() {
            return Err(format!(
                "scripts/kafka_jars.sh could not fetch Kafka's jars (Maven missing or Maven Central unreachable): {}",
                String::from_utf8_lossy(&o.stderr).lines().rev().take(5).collect::<Vec<_>>().join(" | ")
            ));
        }
        eprintln!("kafka jars ready in {:.1} s", t0.elapsed().as_secs_f64());
        Ok(PathBuf::from(String::from_utf8_lossy(&o.stdout).lines().last().unwrap_or_default().trim()))
    });
    match r {
        Ok(p) => Some(p),
        Err(e) => {
            assert!(std::env::var("TAPSTAT_REQUIRE_KAFKA").as_deref() != Ok("1"), "TAPSTAT_REQUIRE_KAFKA=1 but {e}");
            eprintln!("skipped: {e}");
            None
        }
    }
}

/// The tests take turns: two brokers starting at once on a small machine take twice as
/// long, and the outage test's timing is the replay's.
pub static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A free TCP port of 127.0.0.1 (free when asked).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A Kafka broker (and its KRaft controller) in one JVM.
pub struct Kafka {
    child: Option<Child>,
    dir: super::TestDir,
    jars: PathBuf,
    port: u16,
    ssl_port: u16,
    sasl_port: u16,
    starts: u32,
}

/// The SCRAM user of [`Kafka::start_secure`]'s broker.
pub const SCRAM_USER: &str = "tapstat-probe";
/// Its password: a string found nowhere else, so that a test can look for it in every
/// output.
pub const SCRAM_PASSWORD: &str = "Scram-Secret-7f3a9c2e51";
/// The broker keystore's password.
const KEYSTORE_PASSWORD: &str = "broker-keystore-pw";

/// Makes in `dir`: a CA (`ca.pem`, `ca.key`), the broker's key and certificate for
/// IP address 127.0.0.1 signed by it, and a PKCS#12 keystore of them; returns the
/// keystore's path. EC P-256 keys: made in milliseconds.
fn make_certificates(dir: &Path) -> PathBuf {
    let run = |args: &[&str]| {
        let o = Command::new("openssl").args(args).current_dir(dir).output().expect("openssl runs");
        assert!(o.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    };
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    run(&[
        &["req", "-x509"][..],
        &ec[..],
        &["-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=tapstat test CA"][..],
    ]
    .concat());
    run(&[&["req"][..], &ec[..], &["-keyout", "broker.key", "-out", "broker.csr", "-subj", "/CN=127.0.0.1"][..]]
        .concat());
    std::fs::write(dir.join("san.cnf"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "broker.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "broker.pem",
        "-days",
        "2",
        "-extfile",
        "san.cnf",
    ]);
    let pass = format!("pass:{KEYSTORE_PASSWORD}");
    run(&["pkcs12", "-export", "-in", "broker.pem", "-inkey", "broker.key", "-out", "broker.p12", "-passout", &pass]);
    dir.join("broker.p12")
}

impl Kafka {
    /// Formats a storage directory and starts the broker; waits until it answers.
    pub fn start(jars: &Path, tag: &str) -> Kafka {
        Kafka::start_with(jars, tag, false)
    }

    /// A broker that also listens with TLS ([`Kafka::ssl_brokers`]) and with SASL/SCRAM-SHA-512
    /// over TLS ([`Kafka::sasl_brokers`], user [`SCRAM_USER`], password [`SCRAM_PASSWORD`]):
    /// a CA and the broker's certificate (for IP address 127.0.0.1) are made with
    /// openssl into the broker's directory; clients trust [`Kafka::ca`]. The SCRAM
    /// credentials are written into the metadata log when the storage is formatted
    /// (`--add-scram`, KRaft's way: there is no ZooKeeper to hold them).
    pub fn start_secure(jars: &Path, tag: &str) -> Kafka {
        Kafka::start_with(jars, tag, true)
    }

    fn start_with(jars: &Path, tag: &str, secure: bool) -> Kafka {
        let dir = tempdir(tag);
        let (port, ctrl) = (free_port(), free_port());
        let (ssl_port, sasl_port) = if secure { (free_port(), free_port()) } else { (0, 0) };
        let mut listeners = format!("PLAINTEXT://127.0.0.1:{port}");
        if secure {
            listeners += &format!(",SSL://127.0.0.1:{ssl_port},SASL_SSL://127.0.0.1:{sasl_port}");
        }
        let mut props = format!(
            "process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:{ctrl}\n\
             listeners={listeners},CONTROLLER://127.0.0.1:{ctrl}\n\
             advertised.listeners={listeners}\ncontroller.listener.names=CONTROLLER\n\
             listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT\n\
             inter.broker.listener.name=PLAINTEXT\nlog.dirs={}\nnum.partitions=3\n\
             offsets.topic.replication.factor=1\ntransaction.state.log.replication.factor=1\n\
             transaction.state.log.min.isr=1\nshare.coordinator.state.topic.replication.factor=1\n\
             group.initial.rebalance.delay.ms=0\nauto.create.topics.enable=true\n",
            dir.join("data").display()
        );
        if secure {
            let keystore = make_certificates(&dir);
            props += &format!(
                "ssl.keystore.type=PKCS12\nssl.keystore.location={}\nssl.keystore.password={KEYSTORE_PASSWORD}\n\
                 ssl.key.password={KEYSTORE_PASSWORD}\nsasl.enabled.mechanisms=SCRAM-SHA-512\n\
                 listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=\
                 org.apache.kafka.common.security.scram.ScramLoginModule required;\n",
                keystore.display()
            );
        }
        std::fs::write(dir.join("server.properties"), props).unwrap();
        let cp = format!("{}/*", jars.display());
        let uuid = Command::new("java").args(["-cp", &cp, "kafka.tools.StorageTool", "random-uuid"]).output().unwrap();
        let uuid = String::from_utf8_lossy(&uuid.stdout).trim().to_string();
        assert!(!uuid.is_empty(), "StorageTool random-uuid gave nothing");
        let props = dir.join("server.properties");
        let mut format = Command::new("java");
        format.args(["-cp", &cp, "kafka.tools.StorageTool", "format", "-t", &uuid, "-c", props.to_str().unwrap()]);
        if secure {
            format.args(["--add-scram", &format!("SCRAM-SHA-512=[name={SCRAM_USER},password={SCRAM_PASSWORD}]")]);
        }
        let o = format.output().unwrap();
        assert!(o.status.success(), "formatting the storage failed: {}", String::from_utf8_lossy(&o.stderr));
        let mut k = Kafka { child: None, dir, jars: jars.to_path_buf(), port, ssl_port, sasl_port, starts: 0 };
        k.run();
        k
    }

    /// The TLS listener (of [`Kafka::start_secure`]'s broker).
    pub fn ssl_brokers(&self) -> String {
        assert!(self.ssl_port > 0, "not a secure broker");
        format!("127.0.0.1:{}", self.ssl_port)
    }

    /// The SASL_SSL listener (SCRAM-SHA-512) of [`Kafka::start_secure`]'s broker.
    pub fn sasl_brokers(&self) -> String {
        assert!(self.sasl_port > 0, "not a secure broker");
        format!("127.0.0.1:{}", self.sasl_port)
    }

    /// The CA certificate (PEM) that signed the broker's (of [`Kafka::start_secure`]).
    pub fn ca(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    pub fn brokers(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Starts the JVM on the storage and ports it has, and waits until the broker
    /// answers a metadata request.
    pub fn run(&mut self) {
        let t0 = Instant::now();
        self.starts += 1;
        let log = std::fs::File::create(self.dir.join(format!("broker-{}.log", self.starts))).unwrap();
        let cp = format!("{}/*", self.jars.display());
        let child = Command::new("java")
            .args(["-Xms256m", "-Xmx512m", "-cp", &cp, "kafka.Kafka"])
            .arg(self.dir.join("server.properties"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("java starts");
        self.child = Some(child);
        let c: BaseConsumer = ClientConfig::new().set("bootstrap.servers", self.brokers()).create().unwrap();
        loop {
            if let Ok(md) = c.fetch_metadata(None, Duration::from_secs(2)) {
                if !md.brokers().is_empty() {
                    break;
                }
            }
            if let Some(s) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                panic!("the broker exited ({s}): {}", self.log_tail());
            }
            assert!(t0.elapsed() < Duration::from_secs(120), "the broker did not start: {}", self.log_tail());
            std::thread::sleep(Duration::from_millis(200));
        }
        eprintln!(
            "kafka broker up on {} in {:.1} s (start {})",
            self.brokers(),
            t0.elapsed().as_secs_f64(),
            self.starts
        );
    }

    /// Kills the broker (SIGKILL: a crash, nothing flushed by the broker itself).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn log_tail(&self) -> String {
        let t = std::fs::read_to_string(self.dir.join(format!("broker-{}.log", self.starts))).unwrap_or_default();
        let lines: Vec<&str> = t.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for Kafka {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The capture: mix-small (the bench corpus), or the largest dev capture without it.
pub fn capture() -> Option<PathBuf> {
    let corpus = corpus()?;
    let mix = corpus.join("../bench/mix-small.pcap");
    if mix.is_file() {
        return Some(mix);
    }
    eprintln!("note: no {}; using the largest dev capture", mix.display());
    dev_captures(&corpus).into_iter().max_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
}
