//! Links cut on this machine: every packet to or from chosen TCP ports on the loopback interface
//! dropped by nftables, so that the process listening there vanishes for its peers (and they
//! for it, on the connections it accepted): no refusal, no reset, as behind a cut cable, until
//! the cut is healed and TCP carries on. The chaos soak's "cut" fault (docs/reliability.md), in
//! the spirit of Jepsen's partitions; a table of this process's own, removed when dropped.

use std::io::Write;
use std::process::{Command, Stdio};

/// An nftables table whose set of ports is cut.
#[derive(Debug)]
pub struct Cutter {
    table: String,
}

impl Cutter {
    /// Makes the table (needs nftables' `nft` and root): nothing is cut yet.
    pub fn new() -> anyhow::Result<Cutter> {
        let table = format!("gridsched_cut_{}", std::process::id());
        // Loopback traffic passes the output hook once, whichever end sends it.
        nft(&format!(
            "table inet {table} {{\n\
             \x20 set cut {{ type inet_service; }}\n\
             \x20 chain output {{\n\
             \x20   type filter hook output priority -10; policy accept;\n\
             \x20   oif lo tcp dport @cut drop\n\
             \x20   oif lo tcp sport @cut drop\n\
             \x20 }}\n\
             }}\n"
        ))
        .map_err(|e| {
            anyhow::anyhow!(
                "cutting links needs nftables (`nft`) and root: {e} (--no-cuts injects only \
                 crashes and hangs)"
            )
        })?;
        Ok(Cutter { table })
    }

    /// Cuts every link to and from `port`.
    pub fn cut(&self, port: u16) -> anyhow::Result<()> {
        nft(&format!(
            "add element inet {} cut {{ {port} }}\n",
            self.table
        ))
    }

    /// Heals the links of `port`.
    pub fn heal(&self, port: u16) -> anyhow::Result<()> {
        nft(&format!(
            "delete element inet {} cut {{ {port} }}\n",
            self.table
        ))
    }
}

impl Drop for Cutter {
    fn drop(&mut self) {
        let _ = nft(&format!("delete table inet {}\n", self.table));
    }
}

/// Runs `nft -f -` on `script`.
fn nft(script: &str) -> anyhow::Result<()> {
    let mut child = Command::new("nft")
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(script.as_bytes())?;
    let out = child.wait_with_output()?;
    match out.status.success() {
        true => Ok(()),
        false => anyhow::bail!(
            "nft: {}",
            String::from_utf8_lossy(&out.stderr)
                .trim()
                .replace('\n', " ")
        ),
    }
}

/// The port of `HOST:PORT`, or of a URL's authority (`scheme://user:pass@host:port/path`).
pub fn port_of(address: &str) -> Option<u16> {
    let rest = address.split_once("://").map_or(address, |(_, r)| r);
    let authority = rest.split('/').next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    host_port.rsplit_once(':')?.1.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_read_from_addresses_and_urls() {
        assert_eq!(port_of("127.0.0.1:50051"), Some(50051));
        assert_eq!(port_of("http://127.0.0.1:6820"), Some(6820));
        assert_eq!(
            port_of("postgres://gridsched:pa:ss@127.0.0.1:5432/gridsched"),
            Some(5432)
        );
        assert_eq!(port_of("postgres://h/x"), None);
    }

    /// A cut port drops what is sent to it (a connection attempt times out, not refused); healed,
    /// the same listener answers again. Needs root and nftables, as `.ci/run`'s machine has.
    #[test]
    fn a_cut_link_drops_packets_until_healed() {
        use std::net::{TcpListener, TcpStream};
        use std::time::Duration;
        let cutter = match Cutter::new() {
            Ok(c) => c,
            Err(e) if std::env::var_os("CI").is_none() => {
                eprintln!("skipped: {e}");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let wait = Duration::from_millis(500);
        assert!(TcpStream::connect_timeout(&addr, wait).is_ok());
        cutter.cut(addr.port()).unwrap();
        let e = TcpStream::connect_timeout(&addr, wait).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
        cutter.heal(addr.port()).unwrap();
        assert!(TcpStream::connect_timeout(&addr, wait).is_ok());
        let table = cutter.table.clone();
        drop(cutter);
        let listed = Command::new("nft")
            .args(["list", "tables"])
            .output()
            .unwrap();
        assert!(!String::from_utf8_lossy(&listed.stdout).contains(&table));
    }
}
