//! The SWF v2.2 header: the block of `; Key: value` comment lines before the first job line
//! (Parallel Workloads Archive, "Standard Workload Format", header comments), with typed
//! accessors for the keys a simulator needs and the raw ordered list of all entries.
//!
//! Parsing rules: a header line is `;` followed by `Key: value`, where the key is a word of ASCII
//! letters, digits or `_` (matched case-insensitively by the accessors). A line indented by two
//! or more spaces after the `;`, or one with no `Key:`, continues the previous entry (its text is
//! appended to the value after a newline), as in
//! `; Information: http://www.pdc.kth.se/` followed by `;              http://www.cs.huji.ac.il/...`.
//! A bare `;` line ends the continuation. Lines that are neither are kept as free comments.

/// The `Preemption` header value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preemption {
    /// `No`: jobs ran to completion once started.
    No,
    /// `Yes`: jobs may have been preempted (one line per job, the summary).
    Yes,
    /// `Double`: preempted jobs have one summary line plus one line per burst.
    Double,
    /// `TS`: time slicing.
    TimeSlicing,
}

/// The header of an SWF file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SwfHeader {
    entries: Vec<(String, String)>,
    comments: Vec<String>,
    /// Whether the next continuation line may attach to the last entry.
    continuing: bool,
}

impl SwfHeader {
    /// An empty header (a file without header lines, such as the CEA-Curie slice).
    pub fn new() -> SwfHeader {
        SwfHeader::default()
    }

    /// Parses a block of comment lines (each starting with `;`; other lines are ignored).
    pub fn parse(text: &str) -> SwfHeader {
        let mut h = SwfHeader::new();
        for line in text.lines() {
            if let Some(rest) = line.trim_start().strip_prefix(';') {
                h.push_comment(rest);
            }
        }
        h
    }

    /// Adds one comment line, given without its leading `;`.
    pub fn push_comment(&mut self, text: &str) {
        let text = text.trim_end();
        let body = text.trim_start();
        if body.is_empty() {
            self.continuing = false;
            return;
        }
        let indent = text.len() - body.len();
        if indent >= 2
            && self.continuing
            && let Some((_, value)) = self.entries.last_mut()
        {
            value.push('\n');
            value.push_str(body);
            return;
        }
        if let Some((key, value)) = split_key(body) {
            self.entries.push((key.to_owned(), value.to_owned()));
            self.continuing = true;
        } else if self.continuing
            && let Some((_, value)) = self.entries.last_mut()
        {
            value.push('\n');
            value.push_str(body);
        } else {
            self.comments.push(body.to_owned());
        }
    }

    /// True when the file had no header lines at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.comments.is_empty()
    }

    /// All `(key, value)` entries in file order (continuation lines joined with `\n`).
    pub fn entries(&self) -> &[(String, String)] {
        &self.entries
    }

    /// Comment lines of the header block that are not `Key: value` entries.
    pub fn comments(&self) -> &[String] {
        &self.comments
    }

    /// The value of the first entry named `key` (case-insensitive).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }

    /// The values of every entry named `key` (case-insensitive), in file order.
    pub fn get_all<'a, 'k>(&'a self, key: &'k str) -> impl Iterator<Item = &'a str> + use<'a, 'k> {
        self.entries
            .iter()
            .filter(move |(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }

    fn get_u64(&self, key: &str) -> Option<u64> {
        first_token(self.get(key)?).parse().ok()
    }

    fn get_i64(&self, key: &str) -> Option<i64> {
        first_token(self.get(key)?).parse().ok()
    }

    /// `Version`, e.g. `2.2`.
    pub fn version(&self) -> Option<&str> {
        self.get("Version")
    }
    /// `Computer`.
    pub fn computer(&self) -> Option<&str> {
        self.get("Computer")
    }
    /// `Installation`.
    pub fn installation(&self) -> Option<&str> {
        self.get("Installation")
    }
    /// `Acknowledge`: whom the archive asks users of the log to thank.
    pub fn acknowledge(&self) -> Option<&str> {
        self.get("Acknowledge")
    }
    /// Every `Information` entry.
    pub fn information(&self) -> Vec<&str> {
        self.get_all("Information").collect()
    }
    /// `Conversion`.
    pub fn conversion(&self) -> Option<&str> {
        self.get("Conversion")
    }
    /// Every `Note` entry.
    pub fn notes(&self) -> Vec<&str> {
        self.get_all("Note").collect()
    }
    /// `MaxJobs`, when present and a number.
    pub fn max_jobs(&self) -> Option<u64> {
        self.get_u64("MaxJobs")
    }
    /// `MaxRecords`, when present and a number.
    pub fn max_records(&self) -> Option<u64> {
        self.get_u64("MaxRecords")
    }
    /// `Preemption`, when present and one of `No`, `Yes`, `Double`, `TS`.
    pub fn preemption(&self) -> Option<Preemption> {
        let v = first_token(self.get("Preemption")?);
        match v.to_ascii_lowercase().as_str() {
            "no" => Some(Preemption::No),
            "yes" => Some(Preemption::Yes),
            "double" => Some(Preemption::Double),
            "ts" => Some(Preemption::TimeSlicing),
            _ => None,
        }
    }
    /// `UnixStartTime`: the Unix time of the log's time 0.
    pub fn unix_start_time(&self) -> Option<i64> {
        self.get_i64("UnixStartTime")
    }
    /// `TimeZone`: offset in seconds (deprecated by the format in favour of `TimeZoneString`).
    pub fn time_zone(&self) -> Option<i64> {
        self.get_i64("TimeZone")
    }
    /// `TimeZoneString`, e.g. `Europe/Stockholm`.
    pub fn time_zone_string(&self) -> Option<&str> {
        self.get("TimeZoneString")
    }
    /// `StartTime`, as written.
    pub fn start_time(&self) -> Option<&str> {
        self.get("StartTime")
    }
    /// `EndTime`, as written.
    pub fn end_time(&self) -> Option<&str> {
        self.get("EndTime")
    }
    /// `MaxNodes`, when present and a number.
    pub fn max_nodes(&self) -> Option<u64> {
        self.get_u64("MaxNodes")
    }
    /// `MaxProcs`, when present and a number.
    pub fn max_procs(&self) -> Option<u64> {
        self.get_u64("MaxProcs")
    }
    /// `MaxRuntime` in seconds, when present and a number.
    pub fn max_runtime(&self) -> Option<u64> {
        self.get_u64("MaxRuntime")
    }
    /// `MaxMemory` in KB, when present and a number.
    pub fn max_memory(&self) -> Option<u64> {
        self.get_u64("MaxMemory")
    }
    /// `AllowOveruse`, when present and `Yes`/`No` (or `true`/`false`).
    pub fn allow_overuse(&self) -> Option<bool> {
        match first_token(self.get("AllowOveruse")?)
            .to_ascii_lowercase()
            .as_str()
        {
            "yes" | "true" => Some(true),
            "no" | "false" => Some(false),
            _ => None,
        }
    }
    /// `MaxQueues`, when present and a number.
    pub fn max_queues(&self) -> Option<u64> {
        self.get_u64("MaxQueues")
    }
    /// `Queues` (free text), when present.
    pub fn queues_text(&self) -> Option<&str> {
        self.get("Queues")
    }
    /// Every `Queue` entry, as written (e.g. `1  express`).
    pub fn queue_entries(&self) -> Vec<&str> {
        self.get_all("Queue").collect()
    }
    /// `MaxPartitions`, when present and a number.
    pub fn max_partitions(&self) -> Option<u64> {
        self.get_u64("MaxPartitions")
    }
    /// `Partitions` (free text), when present.
    pub fn partitions_text(&self) -> Option<&str> {
        self.get("Partitions")
    }
    /// Every `Partition` entry, as written (e.g. `12 rl.ac.uk`).
    pub fn partition_entries(&self) -> Vec<&str> {
        self.get_all("Partition").collect()
    }

    /// The machine size to simulate by default: `MaxProcs`, else `MaxNodes` (positive values that
    /// fit a `u32` only).
    pub fn machine_procs_hint(&self) -> Option<u32> {
        [self.max_procs(), self.max_nodes()]
            .into_iter()
            .flatten()
            .find(|&n| n > 0)
            .and_then(|n| u32::try_from(n).ok())
    }
}

/// Splits `Key: value` (key = ASCII letters, digits, `_`; a `://` after the word is a URL, not
/// a key).
fn split_key(body: &str) -> Option<(&str, &str)> {
    let colon = body.find(':')?;
    let key = &body[..colon];
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let value = &body[colon + 1..];
    if value.starts_with("//") {
        return None;
    }
    Some((key, value.trim()))
}

fn first_token(v: &str) -> &str {
    v.split_ascii_whitespace().next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
; Version: 2.2
; Computer: IBM SP2
; Installation: Swedish Royal Institute of Technology (KTH)
; Acknowledge: Lars Malinowsky
; Information: http://www.pdc.kth.se/
;              http://www.cs.huji.ac.il/labs/parallel/workload/
; Conversion: Dror Feitelson (feit@cs.huji.ac.il) 01 Jan 2012
; MaxJobs: 28490
; MaxRecords: 28476
; Preemption: No
; UnixStartTime: 843480031
; TimeZone: 3600
; TimeZoneString: Europe/Stockholm
; StartTime: Mon Sep 23 14:00:31 CEST 1996
; EndTime:   Fri Aug 29 10:55:01 CEST 1997
; MaxNodes: 100
; MaxProcs: 100
; Note: uses the EASY scheduler
;
; Queue:  1  express
; Queue:  2  high
;
; Note: THIS IS A CLEANED VERSION OF THE LOG!
;       The filter used to produce it was
;         job<=14 (14 jobs removed)
;
; a free comment
";

    #[test]
    fn typed_accessors() {
        let h = SwfHeader::parse(SAMPLE);
        assert_eq!(h.version(), Some("2.2"));
        assert_eq!(h.computer(), Some("IBM SP2"));
        assert_eq!(
            h.installation(),
            Some("Swedish Royal Institute of Technology (KTH)")
        );
        assert_eq!(h.acknowledge(), Some("Lars Malinowsky"));
        assert_eq!(
            h.information(),
            vec!["http://www.pdc.kth.se/\nhttp://www.cs.huji.ac.il/labs/parallel/workload/"]
        );
        assert_eq!(h.max_jobs(), Some(28490));
        assert_eq!(h.max_records(), Some(28476));
        assert_eq!(h.preemption(), Some(Preemption::No));
        assert_eq!(h.unix_start_time(), Some(843480031));
        assert_eq!(h.time_zone(), Some(3600));
        assert_eq!(h.time_zone_string(), Some("Europe/Stockholm"));
        assert_eq!(h.end_time(), Some("Fri Aug 29 10:55:01 CEST 1997"));
        assert_eq!(h.max_nodes(), Some(100));
        assert_eq!(h.max_procs(), Some(100));
        assert_eq!(h.machine_procs_hint(), Some(100));
        assert_eq!(
            h.notes(),
            vec![
                "uses the EASY scheduler",
                "THIS IS A CLEANED VERSION OF THE LOG!\nThe filter used to produce it was\njob<=14 (14 jobs removed)"
            ]
        );
        assert_eq!(h.queue_entries(), vec!["1  express", "2  high"]);
        assert_eq!(h.comments(), ["a free comment".to_owned()]);
        assert_eq!(h.entries()[0], ("Version".to_owned(), "2.2".to_owned()));
        assert_eq!(h.entries().len(), 20);
        assert_eq!(h.get("maxprocs"), Some("100"), "keys are case-insensitive");
        assert_eq!(h.max_runtime(), None);
        assert!(!h.is_empty());
    }

    #[test]
    fn hints_fall_back_to_max_nodes_and_ignore_junk() {
        let h = SwfHeader::parse("; MaxNodes: 144\n; MaxProcs: lots\n; Preemption: maybe\n");
        assert_eq!(h.max_procs(), None);
        assert_eq!(h.machine_procs_hint(), Some(144));
        assert_eq!(h.preemption(), None);
        assert_eq!(h.get("Preemption"), Some("maybe"));
        let h = SwfHeader::parse("; Preemption: TS\n; AllowOveruse: Yes\n");
        assert_eq!(h.preemption(), Some(Preemption::TimeSlicing));
        assert_eq!(h.allow_overuse(), Some(true));
        assert_eq!(h.machine_procs_hint(), None);
        assert!(SwfHeader::new().is_empty());
    }
}
