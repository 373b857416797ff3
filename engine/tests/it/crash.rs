//! Goal: nothing acknowledged is lost when the process dies at any moment.
//! Method: this test binary runs itself as a child that appends (and sometimes forks)
//! forever, printing `acked <branch> <seq> <id>` after each durable write. The parent
//! kills it with SIGKILL after a seeded number of acks, reopens the store and checks that
//! every acked event is there, the chain verifies and the index agrees with the segments.
//! `HAMLET_CRASH_ROUNDS=n` changes the number of rounds (default 100).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use hamlet_engine::rng::SimRng;
use hamlet_engine::store::Store;
use hamlet_log::verify::verify;
use hamlet_log::{BranchId, EventId};

use crate::support::batch;

#[test]
#[ignore = "the child process of sigkill_at_random_moments_loses_nothing_acknowledged"]
fn crash_child() {
    let Ok(dir) = std::env::var("HAMLET_CRASH_DIR") else { return };
    let round: u64 = std::env::var("HAMLET_CRASH_ROUND").unwrap().parse().unwrap();
    let mut rng = SimRng::stream(round, &["crash child"]);
    let mut store = Store::open(std::path::Path::new(&dir)).unwrap();
    let out = std::io::stdout();
    let mut out = out.lock();
    let main = match store.find_branch("main") {
        Ok(b) => b.id,
        Err(_) => {
            let id = store.create_root("main").unwrap();
            writeln!(out, "acked {} 0 {}", id.to_hex(), id.0.to_hex()).unwrap();
            id
        }
    };
    let mut n_fork = store.branches().len();
    loop {
        let branches = store.branches();
        let target = &branches[rng.int_inclusive(0, branches.len() as u64 - 1) as usize];
        if rng.chance(1, 25) {
            let at = rng.int_inclusive(0, target.head_seq);
            let id = store.fork(target.id, at, &format!("f{round}-{n_fork}")).unwrap();
            n_fork += 1;
            writeln!(out, "acked {} {} {}", id.to_hex(), at + 1, id.0.to_hex()).unwrap();
        } else {
            let mut time = target.head_time;
            let n = rng.int_inclusive(1, 30) as usize;
            let events = batch(&mut rng, &mut time, n);
            let ids = store.append_durable(target.id, &events).unwrap();
            for (i, id) in ids.iter().enumerate() {
                writeln!(
                    out,
                    "acked {} {} {}",
                    target.id.to_hex(),
                    target.head_seq + 1 + i as u64,
                    id.to_hex()
                )
                .unwrap();
            }
        }
        out.flush().unwrap();
        let _ = main;
    }
}

#[test]
fn sigkill_at_random_moments_loses_nothing_acknowledged() {
    let rounds: u64 =
        std::env::var("HAMLET_CRASH_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(100);
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut acked: Vec<(BranchId, u64, EventId)> = Vec::new();
    let mut rng = SimRng::stream(42, &["crash parent"]);
    for round in 0..rounds {
        let mut child = Command::new(&exe)
            .args(["crash::crash_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
            .env("HAMLET_CRASH_DIR", dir.path())
            .env("HAMLET_CRASH_ROUND", round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let wanted = rng.int_inclusive(1, 120);
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = 0;
        while seen < wanted {
            let Some(Ok(line)) = lines.next() else { break };
            let Some(rest) = line.strip_prefix("acked ") else { continue };
            let parts: Vec<&str> = rest.split(' ').collect();
            let branch = BranchId::from_hex(parts[0]).unwrap();
            acked.push((branch, parts[1].parse().unwrap(), EventId::from_hex(parts[2]).unwrap()));
            seen += 1;
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        // Drain what the child printed before it died: acked lines count too.
        for line in lines.map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("acked ") {
                let parts: Vec<&str> = rest.split(' ').collect();
                if parts.len() == 3 {
                    acked.push((
                        BranchId::from_hex(parts[0]).unwrap(),
                        parts[1].parse().unwrap(),
                        EventId::from_hex(parts[2]).unwrap(),
                    ));
                }
            }
        }
        let store = Store::open(dir.path()).unwrap();
        for (branch, seq, id) in &acked {
            let event = store
                .event_at(*branch, *seq)
                .unwrap_or_else(|e| panic!("round {round}: acked {branch} #{seq} is gone: {e}"));
            assert_eq!(event.id, *id, "round {round}: acked {branch} #{seq} changed");
        }
        store.check_index().unwrap_or_else(|e| panic!("round {round}: {e}"));
        if round % 10 == 9 || round + 1 == rounds {
            let bytes = store.export(None, Vec::new()).unwrap();
            let report = verify(&bytes);
            assert!(report.is_clean(), "round {round}: {:?}", report.problems);
        }
    }
    assert!(acked.len() as u64 >= rounds, "the child acknowledged too little to test anything");
}
