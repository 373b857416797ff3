//! Retrieval, as the paper defines it. For a query, every memory gets three scores:
//!
//! * **recency** = decay^(simulated hours since the memory was last accessed), decay 0.995:
//!   the memory used most recently scores highest (the authors' released code ranks the
//!   *least* recently accessed highest; a test pins the right way round);
//! * **importance**: its 1–10 rating;
//! * **relevance**: the cosine similarity of its embedding and the query's.
//!
//! Each is min–max normalised over the candidates to 0..1, the weighted sum ranks them, and
//! the top k are returned. The weights default to 1, 1, 1, as in the paper (§4.1: "all α's
//! are set to 1"): none of the three is known to matter more, and the ablations the paper
//! reports are run by changing the architecture, not the weights. k defaults to 8: with the
//! embedded 1.5B model every prompt token costs (≈ 25 tokens/s read on 2 cores), and 8
//! memories of ≈ 20 tokens keep a prompt's memory part near 160 tokens.
//!
//! The result is a `Retrieved` event with the scores of what was returned; folding it moves
//! those memories' last-accessed time to the event's time. Scores are computed in `f64` from
//! recorded values and stored, never recomputed on replay.

use hamlet_log::event::{AgentId, RetrievalHit, Retrieved};

use super::memory::{Memory, MemoryStream};

/// How retrieval weighs and cuts.
#[derive(Clone, Debug, PartialEq)]
pub struct RetrievalSettings {
    /// Weights of recency, importance and relevance.
    pub weights: [f32; 3],
    /// Recency decay per simulated hour since last access.
    pub decay: f32,
    /// How many memories to return.
    pub top_k: usize,
    /// Equal scores go to the memory made later, by its place in the stream (rulebook 3,
    /// [`crate::rulebook::Rulebook::breaks_retrieval_ties_by_creation`]); else to the later
    /// simulated time, then to the smaller event id — and an id hashes the recorded latencies
    /// and response ids, so two runs given the same answers could part at a tie.
    pub ties_by_creation: bool,
}

impl Default for RetrievalSettings {
    fn default() -> RetrievalSettings {
        RetrievalSettings {
            weights: [1.0, 1.0, 1.0],
            decay: 0.995,
            top_k: 8,
            ties_by_creation: true,
        }
    }
}

/// Cosine similarity; 0 when either vector is empty, zero or of another length.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    cosine_by_norms(a, norm(a), b, norm(b))
}

/// A vector's length (the square root of its summed squares, summed in `f64` in order): what
/// [`cosine`] divides by, computed once per memory instead of once per retrieval.
pub fn norm(v: &[f32]) -> f64 {
    v.iter().map(|x| f64::from(*x) * f64::from(*x)).fold(0.0, |sum, x| sum + x).sqrt()
}

/// [`cosine`] of two vectors whose [`norm`]s are known: the same number, bit for bit.
pub fn cosine_by_norms(a: &[f32], norm_a: f64, b: &[f32], norm_b: f64) -> f64 {
    if a.len() != b.len() || a.is_empty() || norm_a == 0.0 || norm_b == 0.0 {
        return 0.0;
    }
    let dot = a.iter().zip(b).fold(0.0f64, |dot, (x, y)| dot + f64::from(*x) * f64::from(*y));
    dot / (norm_a * norm_b)
}

/// Scales values to 0..1 by their minimum and maximum; all equal → all 0.5.
fn min_max(values: &mut [f64]) {
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    let range = hi - lo;
    for v in values.iter_mut() {
        *v = if range > 0.0 && range.is_finite() { (*v - lo) / range } else { 0.5 };
    }
}

/// Ranks the memories of `stream` that `keep` accepts for `query` at `now_secs` and
/// returns the `Retrieved` event body for the top k (best first; ties go to the memory made
/// later, see [`RetrievalSettings::ties_by_creation`]).
pub fn retrieve(
    agent: AgentId,
    stream: &MemoryStream,
    query: &str,
    query_embedding: &[f32],
    now_secs: u64,
    settings: &RetrievalSettings,
    keep: impl Fn(&Memory) -> bool,
) -> Retrieved {
    let candidates: Vec<&Memory> = stream.memories().iter().filter(|m| keep(m)).collect();
    let decay = f64::from(settings.decay);
    let mut recency: Vec<f64> = candidates
        .iter()
        .map(|m| {
            let hours = now_secs.saturating_sub(m.last_access_secs) as f64 / 3600.0;
            decay.powf(hours)
        })
        .collect();
    let mut importance: Vec<f64> = candidates.iter().map(|m| f64::from(m.importance)).collect();
    let query_norm = norm(query_embedding);
    let mut relevance: Vec<f64> = candidates
        .iter()
        .map(|m| cosine_by_norms(&m.embedding, m.embedding_norm, query_embedding, query_norm))
        .collect();
    min_max(&mut recency);
    min_max(&mut importance);
    min_max(&mut relevance);
    let [wr, wi, wv] = settings.weights.map(f64::from);
    let mut ranked: Vec<(usize, f64)> = (0..candidates.len())
        .map(|i| (i, wr * recency[i] + wi * importance[i] + wv * relevance[i]))
        .collect();
    // Candidates are in the stream's order, the order the memories were made. The order is
    // total (the last tie falls to the position, or to the id), so the k best, picked out
    // and then sorted, are the k a full sort would put first.
    let order = |(a, sa): &(usize, f64), (b, sb): &(usize, f64)| {
        let by_score = sb.total_cmp(sa);
        if settings.ties_by_creation {
            by_score.then(b.cmp(a))
        } else {
            by_score
                .then(candidates[*b].created_secs.cmp(&candidates[*a].created_secs))
                .then(candidates[*a].id.cmp(&candidates[*b].id))
        }
    };
    if settings.top_k > 0 && ranked.len() > settings.top_k {
        ranked.select_nth_unstable_by(settings.top_k - 1, order);
        ranked.truncate(settings.top_k);
    }
    ranked.sort_by(order);
    let hits = ranked
        .into_iter()
        .take(settings.top_k)
        .map(|(i, score)| RetrievalHit {
            memory: candidates[i].id,
            recency: recency[i] as f32,
            importance: importance[i] as f32,
            relevance: relevance[i] as f32,
            score: score as f32,
        })
        .collect();
    Retrieved {
        agent,
        query: query.to_owned(),
        weights: settings.weights,
        decay: settings.decay,
        hits,
    }
}

/// How many pictures a `long_short` recall returns at most: those of the people and places
/// the query names, the rest of the k being the latest memories.
pub const PICTURES_RECALLED: usize = 3;

/// What an agent of the `long_short` memory module recalls for `query` at `now_secs`: its
/// latest picture of each person and place the query names (any case; longer names first,
/// at most [`PICTURES_RECALLED`]), then its latest memories that are not pictures, newest
/// first, up to k in all. No embedding: long-term memory is found by name, short-term by
/// time. Each hit's relevance is 1 for a picture and 0 for the rest; its score is that plus
/// its recency.
pub fn recall_long_short(
    agent: AgentId,
    stream: &MemoryStream,
    query: &str,
    now_secs: u64,
    settings: &RetrievalSettings,
) -> Retrieved {
    let lower = query.to_lowercase();
    let mut named: Vec<(&str, &Memory)> =
        stream.pictures().filter(|(subject, _)| lower.contains(&subject.to_lowercase())).collect();
    named.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(b.0)));
    named.truncate(PICTURES_RECALLED.min(settings.top_k));
    let decay = f64::from(settings.decay);
    let recency =
        |m: &Memory| decay.powf(now_secs.saturating_sub(m.last_access_secs) as f64 / 3600.0);
    let hit = |m: &Memory, relevance: f64| RetrievalHit {
        memory: m.id,
        recency: recency(m) as f32,
        importance: f32::from(m.importance) / 10.0,
        relevance: relevance as f32,
        score: (relevance + recency(m)) as f32,
    };
    let mut hits: Vec<RetrievalHit> = named.iter().map(|(_, m)| hit(m, 1.0)).collect();
    let latest = stream.memories().iter().rev().filter(|m| !stream.is_picture(m));
    hits.extend(latest.take(settings.top_k.saturating_sub(hits.len())).map(|m| hit(m, 0.0)));
    Retrieved {
        agent,
        query: query.to_owned(),
        weights: settings.weights,
        decay: settings.decay,
        hits,
    }
}

#[cfg(test)]
mod tests {
    use hamlet_log::event::{Header, MemoryAdded, MemoryKind};
    use hamlet_log::{Body, BranchId, Event, EventId};

    use super::*;
    use crate::mind::memory::Minds;

    const MEI: AgentId = AgentId(0);

    fn event(n: u8, secs: u64, body: Body) -> Event {
        Event {
            id: EventId([n; 32]),
            parent: EventId::NONE,
            branch: BranchId(EventId([0xbb; 32])),
            header: Header { seq: u64::from(n), sim_time_secs: secs, causes: vec![] },
            body,
        }
    }

    fn memory(n: u8, secs: u64, text: &str, importance: u8, embedding: Vec<f32>) -> Event {
        event(
            n,
            secs,
            Body::MemoryAdded(MemoryAdded {
                agent: MEI,
                kind: MemoryKind::Observation,
                description: text.into(),
                importance,
                embedding,
                evidence: vec![],
            }),
        )
    }

    #[test]
    fn long_short_recalls_the_pictures_a_query_names_then_the_latest_memories() {
        use crate::mind::memory::picture_words;
        let joined = |module: &str| {
            let mut traits = vec![("age".to_owned(), "30".to_owned())];
            if !module.is_empty() {
                traits.push((crate::town::MEMORY_TRAIT.to_owned(), module.to_owned()));
            }
            event(
                0,
                0,
                Body::AgentJoined(hamlet_log::event::AgentJoined {
                    agent: MEI,
                    name: "Mei Lin".into(),
                    persona: String::new(),
                    traits,
                    tile: hamlet_log::event::Tile { x: 0, y: 0 },
                    cash_cents: 0,
                }),
            )
        };
        let picture = |n: u8, secs: u64, subject: &str, text: &str| {
            let Body::MemoryAdded(mut m) = memory(n, secs, "", 4, vec![]).body else {
                unreachable!()
            };
            m.kind = MemoryKind::Reflection;
            m.description = picture_words("Mei Lin", subject, text);
            event(n, secs, Body::MemoryAdded(m))
        };
        let events = [
            memory(1, 10, "the stove is on", 3, vec![1.0, 0.0]),
            picture(2, 20, "John Lin", "he is kind"),
            picture(3, 30, "Hobbs Cafe", "it is busy at noon"),
            memory(4, 40, "the kettle is on", 3, vec![1.0, 0.0]),
            picture(5, 50, "John Lin", "he is kind and tired lately"),
            memory(6, 60, "the rain stopped", 3, vec![1.0, 0.0]),
        ];
        let settings = RetrievalSettings { top_k: 3, ..RetrievalSettings::default() };
        let mut minds = Minds::default();
        minds.apply(&joined("long_short"));
        events.iter().for_each(|e| minds.apply(e));
        let stream = minds.stream(MEI);
        assert!(stream.long_short());
        let ids = |r: &Retrieved| r.hits.iter().map(|h| h.memory.0[0]).collect::<Vec<u8>>();
        let r = recall_long_short(MEI, stream, "what does Mei think of john lin?", 100, &settings);
        assert_eq!(ids(&r), vec![5, 6, 4], "his latest picture, then the latest memories");
        assert_eq!((r.hits[0].relevance, r.hits[1].relevance), (1.0, 0.0));
        let r = recall_long_short(MEI, stream, "lunch at Hobbs Cafe with John Lin", 100, &settings);
        assert_eq!(ids(&r), vec![3, 5, 6], "the longer name first");
        let r = recall_long_short(MEI, stream, "the weather", 100, &settings);
        assert_eq!(ids(&r), vec![6, 4, 1], "no picture named: the latest, older pictures left out");
        // The same memories, the stream module: no pictures are kept.
        let mut minds = Minds::default();
        minds.apply(&joined(""));
        events.iter().for_each(|e| minds.apply(e));
        assert!(!minds.stream(MEI).long_short() && minds.stream(MEI).pictures().count() == 0);
    }

    #[test]
    fn the_memory_accessed_most_recently_ranks_first() {
        // Same importance, same relevance: only recency differs.
        let mut minds = Minds::default();
        minds.apply(&memory(1, 0, "the stove is on", 3, vec![1.0, 0.0]));
        minds.apply(&memory(2, 9 * 3600, "the kettle is on", 3, vec![1.0, 0.0]));
        let now = 10 * 3600;
        let r = retrieve(
            MEI,
            minds.stream(MEI),
            "kitchen",
            &[1.0, 0.0],
            now,
            &RetrievalSettings::default(),
            |_| true,
        );
        assert_eq!(r.hits[0].memory, EventId([2; 32]), "accessed 1 hour ago beats 10 hours ago");
        assert_eq!((r.hits[0].recency, r.hits[1].recency), (1.0, 0.0));
        // Retrieving the old one makes it the most recently accessed: now it wins.
        let only_old = retrieve(
            MEI,
            minds.stream(MEI),
            "stove",
            &[1.0, 0.0],
            now,
            &RetrievalSettings::default(),
            |m| m.id == EventId([1; 32]),
        );
        minds.apply(&event(3, now, Body::Retrieved(only_old)));
        assert_eq!(minds.stream(MEI).get(EventId([1; 32])).unwrap().last_access_secs, now);
        let later = retrieve(
            MEI,
            minds.stream(MEI),
            "kitchen",
            &[1.0, 0.0],
            now + 3600,
            &RetrievalSettings::default(),
            |_| true,
        );
        assert_eq!(later.hits[0].memory, EventId([1; 32]));
    }

    #[test]
    fn importance_and_relevance_each_count_and_scores_are_recorded() {
        let mut minds = Minds::default();
        minds.apply(&memory(1, 100, "Delphine plans a party at the café", 8, vec![0.0, 1.0]));
        minds.apply(&memory(2, 100, "Mei brushes her teeth", 1, vec![1.0, 0.0]));
        minds.apply(&memory(3, 100, "Tamsin mentions the party", 4, vec![0.6, 0.8]));
        let settings = RetrievalSettings { top_k: 2, ..RetrievalSettings::default() };
        let r =
            retrieve(MEI, minds.stream(MEI), "the party", &[0.0, 1.0], 200, &settings, |_| true);
        let ids: Vec<u8> = r.hits.iter().map(|h| h.memory.0[0]).collect();
        assert_eq!(ids, [1, 3], "relevant and important first; top k = 2");
        let best = &r.hits[0];
        assert_eq!((best.importance, best.relevance, best.recency), (1.0, 1.0, 0.5));
        assert!((best.score - 2.5).abs() < 1e-6);
        assert_eq!((r.weights, r.decay), ([1.0, 1.0, 1.0], 0.995));
        // Weights move the ranking: relevance alone.
        let only_relevance = RetrievalSettings { weights: [0.0, 0.0, 1.0], ..settings.clone() };
        let r =
            retrieve(MEI, minds.stream(MEI), "teeth", &[1.0, 0.0], 200, &only_relevance, |_| true);
        assert_eq!(r.hits[0].memory, EventId([2; 32]));
    }

    #[test]
    fn equal_scores_go_to_the_memory_made_later_never_to_the_smaller_id() {
        // Made in one step, alike in every score; the later one has the larger id here and
        // the smaller there: ids hash what a run recorded, latencies among it.
        for (first, second) in [(1u8, 9u8), (9, 1)] {
            let mut minds = Minds::default();
            minds.apply(&memory(first, 100, "Mei sees the kettle", 3, vec![1.0, 0.0]));
            minds.apply(&memory(second, 100, "Mei sees the kettle", 3, vec![1.0, 0.0]));
            let by = |ties_by_creation| {
                let settings = RetrievalSettings { ties_by_creation, ..Default::default() };
                retrieve(MEI, minds.stream(MEI), "kettle", &[1.0, 0.0], 200, &settings, |_| true)
                    .hits[0]
                    .memory
            };
            assert_eq!(by(true), EventId([second; 32]), "the later made, whatever its id");
            assert_eq!(
                by(false),
                EventId([first.min(second); 32]),
                "rulebooks 1–2: the smaller id"
            );
        }
    }

    #[test]
    fn the_k_best_picked_out_are_the_first_k_of_a_full_ranking_ties_and_all() {
        // 200 memories with few distinct scores (many ties), in both tie rules, for several
        // k: the partial selection must give what sorting every candidate gives.
        let mut minds = Minds::default();
        for n in 0..200u8 {
            let e = [f32::from(n % 3), f32::from(n % 2), 1.0];
            minds.apply(&memory(n, u64::from(n % 4) * 3600, "m", 1 + n % 5, e.to_vec()));
        }
        let stream = minds.stream(MEI);
        for ties_by_creation in [true, false] {
            let all = RetrievalSettings { top_k: 1000, ties_by_creation, ..Default::default() };
            let full = retrieve(MEI, stream, "q", &[1.0, 0.5, 0.0], 5 * 3600, &all, |_| true);
            assert_eq!(full.hits.len(), 200);
            for k in [1, 7, 8, 50, 199, 200] {
                let settings = RetrievalSettings { top_k: k, ..all.clone() };
                let some =
                    retrieve(MEI, stream, "q", &[1.0, 0.5, 0.0], 5 * 3600, &settings, |_| true);
                assert_eq!(
                    some.hits,
                    full.hits[..k],
                    "k = {k}, ties by creation {ties_by_creation}"
                );
            }
        }
        // Norms known beforehand give the very same cosine.
        let (a, b) = ([0.3f32, -1.7, 2.2], [1.1f32, 0.4, -0.9]);
        assert_eq!(cosine(&a, &b).to_bits(), cosine_by_norms(&a, norm(&a), &b, norm(&b)).to_bits());
        let naive = {
            let dot: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
            let na: f64 = a.iter().map(|x| f64::from(*x) * f64::from(*x)).sum();
            let nb: f64 = b.iter().map(|x| f64::from(*x) * f64::from(*x)).sum();
            dot / (na.sqrt() * nb.sqrt())
        };
        assert_eq!(cosine(&a, &b).to_bits(), naive.to_bits());
    }

    #[test]
    fn recency_decays_by_0_995_per_simulated_hour() {
        let mut minds = Minds::default();
        minds.apply(&memory(1, 0, "a", 5, vec![1.0]));
        minds.apply(&memory(2, 0, "b", 5, vec![1.0]));
        minds.apply(&memory(3, 3600 * 100, "c", 5, vec![1.0]));
        // Normalised: the two oldest share recency 0, the newest has 1; before
        // normalising, 100 hours is 0.995^100 ≈ 0.606 of fresh.
        let r = retrieve(
            MEI,
            minds.stream(MEI),
            "q",
            &[1.0],
            3600 * 100,
            &RetrievalSettings::default(),
            |_| true,
        );
        assert_eq!(r.hits[0].memory, EventId([3; 32]));
        assert!((0.995f64.powf(100.0) - 0.6058).abs() < 1e-3);
        assert!(cosine(&[1.0, 0.0], &[0.0, 1.0]).abs() < 1e-12 && cosine(&[], &[]) == 0.0);
    }

    #[test]
    fn seeds_split_on_semicolons_and_reflection_triggers_on_summed_importance() {
        use crate::mind::memory::seed_statements;
        assert_eq!(
            seed_statements("Mei Lin is a student; she paints ;; she loves the park;"),
            ["Mei Lin is a student", "she paints", "she loves the park"]
        );
        let mut minds = Minds::default();
        for (n, imp) in [(1u8, 9u8), (2, 7), (3, 2)] {
            minds.apply(&memory(n, u64::from(n) * 60, "x", imp, vec![1.0]));
        }
        assert_eq!(minds.stream(MEI).importance_since(0), 18);
        assert_eq!(minds.stream(MEI).importance_since(60), 9);
        assert_eq!(minds.stream(MEI).recent(2).len(), 2);
        assert!(minds.stream(AgentId(9)).is_empty());
    }
}
