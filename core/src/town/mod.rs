//! A town's definition, loaded from a TOML file (`engine/towns/README.md` describes it):
//! the tile grid with collision, the environment tree (town → sectors → arenas → objects,
//! a petgraph graph), spawn points, prices and wages, personas, and the scenario.
//!
//! Loading validates everything and reports every problem at once, each naming the file,
//! the line and the key. A loaded [`Definition`] is immutable; the run records its source
//! verbatim in a `TownLoaded` event, so a recording carries the town it ran.

pub mod actions;
pub mod build;
pub mod clock;
pub mod generate;
pub mod genesis;
pub mod map;
pub mod objects;
pub mod perception;
pub mod spatial;
pub mod walk;

use std::fmt;

use hamlet_log::event::Tile;
use petgraph::graph::{DiGraph, NodeIndex};
use serde::Deserialize;
use toml::Spanned;

pub use map::Grid;

/// One problem in a town file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// The key, as a path (`persona[2].home`).
    pub key: String,
    /// What is wrong.
    pub message: String,
}

/// Why a town file was refused: every problem found, with the file's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct TownError {
    /// The file, as given.
    pub file: String,
    /// The problems, in the order found.
    pub problems: Vec<Problem>,
}

impl fmt::Display for TownError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "town {} has {} problem(s)", self.file, self.problems.len())?;
        for p in &self.problems {
            match p.line {
                Some(line) => write!(f, "\n  {}:{line}: {}: {}", self.file, p.key, p.message)?,
                None => write!(f, "\n  {}: {}: {}", self.file, p.key, p.message)?,
            }
        }
        Ok(())
    }
}

// The file as written. Spans keep the line of each key for error messages.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTown {
    town: RawHeader,
    #[serde(default)]
    perception: Option<Spanned<RawPerception>>,
    map: RawMap,
    #[serde(default)]
    sector: Vec<Spanned<RawSector>>,
    #[serde(default)]
    price: Vec<Spanned<RawPrice>>,
    #[serde(default)]
    wage: Vec<Spanned<RawWage>>,
    #[serde(default)]
    persona: Vec<Spanned<RawPersona>>,
    #[serde(default)]
    mayor: Option<Spanned<RawMayor>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMayor {
    who: String,
    #[serde(default)]
    funds_cents: i64,
    #[serde(default = "found_cents")]
    found_cents: i64,
    #[serde(default)]
    site: Vec<RawSite>,
}

fn found_cents() -> i64 {
    40_000
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSite {
    name: String,
    at: [u16; 2],
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHeader {
    name: Spanned<String>,
    start: Spanned<String>,
    #[serde(default = "ten")]
    seconds_per_step: Spanned<u32>,
    #[serde(default)]
    date: Option<Spanned<String>>,
}

fn ten() -> Spanned<u32> {
    Spanned::new(0..0, 10)
}

#[derive(Deserialize, Clone, Copy)]
#[serde(deny_unknown_fields)]
struct RawPerception {
    #[serde(default = "eight")]
    vision_radius_tiles: u16,
    #[serde(default = "eight")]
    attention_bandwidth: u16,
    #[serde(default = "five")]
    retention_steps: u16,
}

fn eight() -> u16 {
    8
}
fn five() -> u16 {
    5
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMap {
    rows: Spanned<Vec<Spanned<String>>>,
    legend: Spanned<std::collections::BTreeMap<String, Spanned<String>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSector {
    name: Spanned<String>,
    kind: Spanned<String>,
    #[serde(default)]
    arena: Vec<Spanned<RawArena>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawArena {
    name: Spanned<String>,
    #[serde(default)]
    public: bool,
    #[serde(default)]
    objects: Vec<Spanned<RawObject>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawObject {
    name: String,
    at: [u16; 2],
    #[serde(default)]
    states: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPrice {
    sector: String,
    item: String,
    cents: i64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWage {
    sector: String,
    cents_per_hour: i64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPersona {
    name: String,
    age: u16,
    #[serde(default)]
    innate: Vec<String>,
    seed: String,
    home: String,
    #[serde(default)]
    workplace: Option<String>,
    cash_cents: i64,
    #[serde(default)]
    spawn: Option<[u16; 2]>,
    #[serde(default = "full")]
    strategy: String,
    #[serde(default)]
    currently: Option<String>,
    #[serde(default)]
    hosts: Vec<RawHosted>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    goal: Option<String>,
    #[serde(default)]
    measure: Option<RawMeasure>,
    #[serde(default)]
    planning: Option<String>,
    #[serde(default)]
    memory: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMeasure {
    #[serde(default)]
    earn_cents: Option<i64>,
    #[serde(default)]
    buy: Option<String>,
    #[serde(default)]
    times: Option<u32>,
    #[serde(default)]
    meet: Option<String>,
    #[serde(default)]
    found: Option<u32>,
    #[serde(default)]
    hire: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHosted {
    what: String,
    place: String,
    from: String,
    until: String,
}

fn full() -> String {
    "full".into()
}

/// Kinds of sector a town may have.
pub const SECTOR_KINDS: &[&str] =
    &["home", "cafe", "market", "college", "dorm", "park", "bar", "store", "office", "other"];
/// The shipped town, Willowmere (`engine/towns/willowmere.toml`), compiled in: what
/// `hamlet run` runs when no town file is given.
pub const WILLOWMERE: &str = include_str!("../../../engine/towns/willowmere.toml");

/// The longest `currently` a persona may have, in characters: it opens every prompt.
pub const CURRENTLY_CHARS: usize = 400;

/// The longest `what` of an event a persona hosts, in characters.
pub const HOSTED_WHAT_CHARS: usize = 200;

/// The trait of an agent (in its `AgentJoined`) naming the model it thinks with, where its
/// town or its `add-agent` named one.
pub const MODEL_TRAIT: &str = "model";

/// The trait of an agent (in its `AgentJoined`) holding its life goal, where its town gave one.
pub const GOAL_TRAIT: &str = "goal";

/// The longest life goal a persona may have, in characters: it opens every prompt.
pub const GOAL_CHARS: usize = 400;

/// The longest name of a model a persona may name.
pub const MODEL_NAME_CHARS: usize = 64;

/// Why `name` cannot name a model (a persona's `model`, a config file's profile), or `None`:
/// one word of letters, digits, `-`, `_` and `.`, at most [`MODEL_NAME_CHARS`] long.
pub fn model_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("a model's name is empty".into())
    } else if name.chars().count() > MODEL_NAME_CHARS {
        Some(format!("a model's name is at most {MODEL_NAME_CHARS} characters"))
    } else if !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')) {
        Some(format!(
            "`{name}` is not a model's name: one word of letters, digits, `-`, `_` and `.`"
        ))
    } else {
        None
    }
}

/// The agent strategies: the paper's full architecture and its two ablations.
pub const STRATEGIES: &[&str] = &["full", "no_reflection", "no_reflection_no_planning"];

/// Perception limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Perception {
    /// How far an agent sees, in tiles.
    pub vision_radius_tiles: u16,
    /// How many things it notices per step, nearest first.
    pub attention_bandwidth: u16,
    /// Steps before it notices the same thing again.
    pub retention_steps: u16,
}

/// A game object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object {
    /// Its name within its arena.
    pub name: String,
    /// Where it stands.
    pub at: Tile,
    /// What it can be doing; the first is its resting state.
    pub states: Vec<String>,
}

/// An arena (a room, or an area of a park).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arena {
    /// Its name within its sector.
    pub name: String,
    /// Its floor, in row-major order.
    pub tiles: Vec<Tile>,
    /// Its objects.
    pub objects: Vec<Object>,
    /// Every resident knows it from the start (a shop's floor, a café's dining room, a
    /// park): it is in every agent's spatial memory before the agent has been there.
    pub public: bool,
}

/// A sector (a building, a park).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sector {
    /// Its name.
    pub name: String,
    /// Its kind (one of [`SECTOR_KINDS`]).
    pub kind: String,
    /// Its arenas.
    pub arenas: Vec<Arena>,
}

/// Something a shop sells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Price {
    /// The shop (a sector).
    pub sector: String,
    /// What.
    pub item: String,
    /// For how much.
    pub cents: i64,
}

/// What working somewhere pays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wage {
    /// The workplace (a sector).
    pub sector: String,
    /// Per simulated hour.
    pub cents_per_hour: i64,
}

/// A persona.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Persona {
    /// The name.
    pub name: String,
    /// The age.
    pub age: u16,
    /// Innate traits.
    pub innate: Vec<String>,
    /// The `;`-separated seed paragraph.
    pub seed: String,
    /// Home, `sector:arena`.
    pub home: String,
    /// Workplace, `sector:arena`.
    pub workplace: Option<String>,
    /// Starting cash.
    pub cash_cents: i64,
    /// Where it appears.
    pub spawn: Tile,
    /// One of [`STRATEGIES`].
    pub strategy: String,
    /// What the persona is busy with as the run starts, in the town author's words ("Mei Lin
    /// is telling everyone about the reading at the library on Saturday at 18:00"): part of
    /// who the agent is in every prompt, renewed by the agent each morning (rulebook 4).
    pub currently: Option<String>,
    /// The events the persona hosts (a party, a reading, a meeting it calls), in the town
    /// author's words: each is the host's own fixed appointment on its day.
    pub hosts: Vec<Hosted>,
    /// The language model this persona thinks with, by name: `default` or `small` (the
    /// embedded models) or a profile of the config file (`[models.NAME]`). `None`: the run's
    /// model. Whether the name is known is the run's to check, not the town file's.
    pub model: Option<String>,
    /// What the persona wants from life, in the town author's words ("Mei Lin wants to open
    /// a bakery in Oak Hill by the summer"): part of who the agent is in every prompt.
    pub goal: Option<String>,
    /// How progress toward the goal is counted from the log, where it can be
    /// (`hamlet research goals`).
    pub measure: Option<Measure>,
    /// How the agent plans: one of [`PLANNING_MODULES`].
    pub planning: String,
    /// How the agent remembers: one of [`MEMORY_MODULES`].
    pub memory: String,
}

/// A goal's progress as the log counts it: money earned, a purchase made so many times, a
/// conversation had with someone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Measure {
    /// Cents paid to the agent (wages and the like), in all.
    Earn {
        /// How many.
        cents: i64,
    },
    /// Purchases whose reason holds `item` (any case).
    Buy {
        /// What.
        item: String,
        /// How many times.
        times: u32,
    },
    /// Conversations with the persona named.
    Meet {
        /// Whom.
        name: String,
    },
    /// Businesses the agent founded, as the town's mayor.
    Found {
        /// How many.
        count: u32,
    },
    /// Jobs the agent posted, as the town's mayor, that someone took.
    Hire {
        /// How many.
        count: u32,
    },
}

impl Measure {
    /// As an agent's `measure` trait records it: `earn 20000`, `buy 3 bread`, `meet Mei Lin`,
    /// `found 1`, `hire 2`.
    pub fn to_trait(&self) -> String {
        match self {
            Measure::Earn { cents } => format!("earn {cents}"),
            Measure::Buy { item, times } => format!("buy {times} {item}"),
            Measure::Meet { name } => format!("meet {name}"),
            Measure::Found { count } => format!("found {count}"),
            Measure::Hire { count } => format!("hire {count}"),
        }
    }

    /// The measure a `measure` trait records, if it is one.
    pub fn from_trait(text: &str) -> Option<Measure> {
        let (verb, rest) = text.split_once(' ')?;
        match verb {
            "earn" => Some(Measure::Earn { cents: rest.parse().ok()? }),
            "buy" => {
                let (times, item) = rest.split_once(' ')?;
                Some(Measure::Buy { item: item.to_owned(), times: times.parse().ok()? })
            }
            "meet" if !rest.is_empty() => Some(Measure::Meet { name: rest.to_owned() }),
            "found" => Some(Measure::Found { count: rest.parse().ok()? }),
            "hire" => Some(Measure::Hire { count: rest.parse().ok()? }),
            _ => None,
        }
    }

    /// What counts, in words: "earn $200.00", "buy bread 3 times", "meet Mei Lin", "found a
    /// business", "hire 2 people".
    pub fn words(&self) -> String {
        match self {
            Measure::Earn { cents } => format!("earn ${:.2}", *cents as f64 / 100.0),
            Measure::Buy { item, times: 1 } => format!("buy {item}"),
            Measure::Buy { item, times } => format!("buy {item} {times} times"),
            Measure::Meet { name } => format!("meet {name}"),
            Measure::Found { count: 1 } => "found a business".to_owned(),
            Measure::Found { count } => format!("found {count} businesses"),
            Measure::Hire { count: 1 } => "hire someone".to_owned(),
            Measure::Hire { count } => format!("hire {count} people"),
        }
    }
}

/// The trait of an agent (in its `AgentJoined`) holding how its goal's progress is counted.
pub const MEASURE_TRAIT: &str = "measure";

/// A town file's `[mayor] who` naming the person at the viewer.
pub const PLAYER: &str = "player";

/// Who leads a town and with what (`[mayor]`, after AgentSims' mayor mode): posts jobs,
/// founds businesses on its sites, sets wages, calls meetings, gives tasks (`MayorActed`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mayor {
    /// The mayor.
    pub who: MayorWho,
    /// The treasury at the start, in cents.
    pub funds_cents: i64,
    /// What founding a business costs, from the treasury.
    pub found_cents: i64,
    /// Where a business may be founded, each site once.
    pub sites: Vec<Site>,
}

/// A town's mayor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MayorWho {
    /// A persona, by name.
    Agent(String),
    /// The person at the viewer (or at `hamlet mayor`).
    Player,
}

/// A lot a business may be founded on: its name and the building's north-west corner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// Its name.
    pub name: String,
    /// The north-west corner of what is built there.
    pub origin: Tile,
}

/// The planning modules a persona may name: `paper`, the paper's day plan broken into hour
/// parts and actions (the default), or `goal_qa`, questions about its life goal, their
/// answers, then a place and a purpose there, asked again when the purpose is done.
pub const PLANNING_MODULES: &[&str] = &["paper", "goal_qa"];

/// The memory modules a persona may name: `stream`, the paper's memory stream retrieved by
/// recency, importance and relevance (the default), or `long_short`, what it knows of each
/// person and place kept as a summary (long-term) beside its latest memories (short-term).
pub const MEMORY_MODULES: &[&str] = &["stream", "long_short"];

/// The trait of an agent (in its `AgentJoined`) naming its planning module, where it is not
/// the default.
pub const PLANNING_TRAIT: &str = "planning";

/// The trait of an agent (in its `AgentJoined`) naming its memory module, where it is not
/// the default.
pub const MEMORY_TRAIT: &str = "memory";

/// An event a persona hosts: what, where, and when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hosted {
    /// What, in words ("her party").
    pub what: String,
    /// Where: `sector` or `sector:arena`.
    pub place: String,
    /// When it starts, in simulated seconds since midnight of day 0.
    pub start_secs: u64,
    /// How long it lasts, in seconds (at most a day).
    pub duration_secs: u32,
}

impl Persona {
    /// The statements of the seed paragraph, trimmed, empty ones dropped.
    pub fn seed_statements(&self) -> Vec<&str> {
        seed_statements(&self.seed)
    }
}

/// The seed memories of a persona: its `;`-separated paragraph, one statement each,
/// trimmed, empty ones dropped.
pub fn seed_statements(persona: &str) -> Vec<&str> {
    persona.split(';').map(str::trim).filter(|s| !s.is_empty()).collect()
}

/// A node of the environment tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// The town.
    Town(String),
    /// A sector, by index.
    Sector(usize),
    /// An arena: sector and arena index.
    Arena(usize, usize),
    /// An object: sector, arena and object index.
    Object(usize, usize, usize),
}

/// A validated town.
#[derive(Clone, Debug)]
pub struct Definition {
    /// The town's name.
    pub name: String,
    /// When the run starts, in simulated seconds.
    pub start_secs: u64,
    /// Simulated seconds per step.
    pub seconds_per_step: u32,
    /// The calendar date of day 0 (year, month, day), if the town names one.
    pub date: Option<(i32, u32, u32)>,
    /// Perception limits.
    pub perception: Perception,
    /// The tile grid.
    pub grid: Grid,
    /// Sectors, arenas, objects.
    pub sectors: Vec<Sector>,
    /// The environment tree: town → sectors → arenas → objects.
    pub tree: DiGraph<Place, ()>,
    /// The tree's root.
    pub root: NodeIndex,
    /// Prices.
    pub prices: Vec<Price>,
    /// Wages.
    pub wages: Vec<Wage>,
    /// Personas.
    pub personas: Vec<Persona>,
    /// Who leads the town, and with what, if anyone does (`[mayor]`).
    pub mayor: Option<Mayor>,
    /// The file's text, verbatim (recorded in `TownLoaded`).
    pub source: String,
}

impl Definition {
    /// Validates a town's text; `file` names it in errors.
    pub fn parse(file: &str, source: &str) -> Result<Definition, TownError> {
        let line_of =
            |offset: usize| Some(source.get(..offset).map_or(0, |s| s.matches('\n').count()) + 1);
        let raw: RawTown = toml::from_str(source).map_err(|e| TownError {
            file: file.to_owned(),
            problems: vec![Problem {
                line: e.span().and_then(|s| line_of(s.start)),
                key: String::new(),
                message: e.message().to_owned(),
            }],
        })?;
        let mut problems = Vec::new();
        let mut bad = |span: std::ops::Range<usize>, key: String, message: String| {
            problems.push(Problem {
                line: if span.is_empty() && span.start == 0 { None } else { line_of(span.start) },
                key,
                message,
            });
        };

        // Header.
        let start_secs = match parse_start(raw.town.start.get_ref()) {
            Some(t) => t,
            None => {
                bad(
                    raw.town.start.span(),
                    "town.start".into(),
                    format!("`{}` is not `day<N> HH:MM`", raw.town.start.get_ref()),
                );
                0
            }
        };
        let seconds_per_step = *raw.town.seconds_per_step.get_ref();
        if !(1..=3600).contains(&seconds_per_step) {
            bad(
                raw.town.seconds_per_step.span(),
                "town.seconds_per_step".into(),
                format!("{seconds_per_step} is not 1 to 3600"),
            );
        }
        let date = raw.town.date.as_ref().and_then(|d| match parse_date(d.get_ref()) {
            Some(date) => Some(date),
            None => {
                bad(
                    d.span(),
                    "town.date".into(),
                    format!("`{}` is not a date `YYYY-MM-DD`", d.get_ref()),
                );
                None
            }
        });
        let perception = raw.perception.as_ref().map_or(
            RawPerception { vision_radius_tiles: 8, attention_bandwidth: 8, retention_steps: 5 },
            |p| *p.get_ref(),
        );

        // Sectors and arenas.
        let mut sectors: Vec<Sector> = Vec::new();
        for (si, s) in raw.sector.iter().enumerate() {
            let s = s.get_ref();
            let key = format!("sector[{si}]");
            check_name(&mut bad, s.name.span(), format!("{key}.name"), s.name.get_ref());
            if sectors.iter().any(|o| o.name == *s.name.get_ref()) {
                bad(
                    s.name.span(),
                    format!("{key}.name"),
                    format!("a sector named `{}` exists already", s.name.get_ref()),
                );
            }
            if !SECTOR_KINDS.contains(&s.kind.get_ref().as_str()) {
                bad(
                    s.kind.span(),
                    format!("{key}.kind"),
                    format!("`{}` is not one of {}", s.kind.get_ref(), SECTOR_KINDS.join(", ")),
                );
            }
            let mut arenas: Vec<Arena> = Vec::new();
            for (ai, a) in s.arena.iter().enumerate() {
                let akey = format!("{key}.arena[{ai}]");
                let a_ref = a.get_ref();
                check_name(
                    &mut bad,
                    a_ref.name.span(),
                    format!("{akey}.name"),
                    a_ref.name.get_ref(),
                );
                if arenas.iter().any(|o| o.name == *a_ref.name.get_ref()) {
                    bad(
                        a_ref.name.span(),
                        format!("{akey}.name"),
                        format!(
                            "`{}` has two arenas named `{}`",
                            s.name.get_ref(),
                            a_ref.name.get_ref()
                        ),
                    );
                }
                arenas.push(Arena {
                    name: a_ref.name.get_ref().clone(),
                    tiles: Vec::new(),
                    objects: Vec::new(),
                    public: a_ref.public,
                });
            }
            sectors.push(Sector {
                name: s.name.get_ref().clone(),
                kind: s.kind.get_ref().clone(),
                arenas,
            });
        }

        // The map.
        let mut legend = std::collections::BTreeMap::new();
        for (ch, target) in raw.map.legend.get_ref() {
            let mut chars = ch.chars();
            let (Some(c), None) = (chars.next(), chars.next()) else {
                bad(
                    target.span(),
                    format!("map.legend.{ch}"),
                    "a legend key is one character".into(),
                );
                continue;
            };
            if c == '#' || c == '.' {
                bad(
                    target.span(),
                    format!("map.legend.{ch}"),
                    "`#` and `.` mean wall and open ground".into(),
                );
                continue;
            }
            match find_arena(&sectors, target.get_ref()) {
                Some(found) => {
                    legend.insert(c, found);
                }
                None => bad(
                    target.span(),
                    format!("map.legend.{ch}"),
                    format!("`{}` is not a declared sector:arena", target.get_ref()),
                ),
            }
        }
        let rows = raw.map.rows.get_ref();
        let width = rows.first().map_or(0, |r| r.get_ref().chars().count());
        if rows.is_empty() || width == 0 {
            bad(raw.map.rows.span(), "map.rows".into(), "the map has no tiles".into());
        }
        let mut cells = Vec::with_capacity(width * rows.len());
        for (y, row) in rows.iter().enumerate() {
            let n = row.get_ref().chars().count();
            if n != width {
                bad(
                    row.span(),
                    format!("map.rows[{y}]"),
                    format!("is {n} tiles wide, the first row {width}"),
                );
            }
            for (x, c) in row.get_ref().chars().enumerate().take(width) {
                let cell = match c {
                    '#' => map::Cell::Wall,
                    '.' => map::Cell::Open,
                    c => match legend.get(&c) {
                        Some(&(si, ai)) => {
                            if let Some(arena) =
                                sectors.get_mut(si).and_then(|s| s.arenas.get_mut(ai))
                            {
                                arena.tiles.push(Tile { x: x as u16, y: y as u16 });
                            }
                            map::Cell::Arena(si as u16, ai as u16)
                        }
                        None => {
                            bad(
                                row.span(),
                                format!("map.rows[{y}]"),
                                format!("`{c}` at column {x} is not `#`, `.` or a legend key"),
                            );
                            map::Cell::Wall
                        }
                    },
                };
                cells.push(cell);
            }
            cells.resize((y + 1) * width, map::Cell::Wall);
        }
        let grid = Grid::new(width as u16, rows.len() as u16, cells);
        for (si, s) in raw.sector.iter().enumerate() {
            for (ai, a) in s.get_ref().arena.iter().enumerate() {
                let akey = format!("sector[{si}].arena[{ai}]");
                let Some(arena) = sectors.get(si).and_then(|s| s.arenas.get(ai)) else { continue };
                if arena.tiles.is_empty() {
                    bad(
                        a.span(),
                        akey.clone(),
                        format!(
                            "arena `{}` has no tile on the map (give it a legend key)",
                            arena.name
                        ),
                    );
                }
                let mut objects: Vec<Object> = Vec::new();
                for (oi, o) in a.get_ref().objects.iter().enumerate() {
                    let okey = format!("{akey}.objects[{oi}]");
                    let r = o.get_ref();
                    check_name(&mut bad, o.span(), format!("{okey}.name"), &r.name);
                    if objects.iter().any(|x| x.name == r.name) {
                        bad(
                            o.span(),
                            format!("{okey}.name"),
                            format!("two objects named `{}` in one arena", r.name),
                        );
                    }
                    let at = Tile { x: r.at[0], y: r.at[1] };
                    if !arena.tiles.contains(&at) {
                        bad(
                            o.span(),
                            format!("{okey}.at"),
                            format!("[{}, {}] is not a tile of arena `{}`", at.x, at.y, arena.name),
                        );
                    }
                    let states = if r.states.is_empty() {
                        vec!["idle".to_owned()]
                    } else {
                        r.states.clone()
                    };
                    objects.push(Object { name: r.name.clone(), at, states });
                }
                if let Some(arena) = sectors.get_mut(si).and_then(|s| s.arenas.get_mut(ai)) {
                    arena.objects = objects;
                }
            }
        }
        if let Some((a, b)) = grid.disconnected_pair() {
            bad(raw.map.rows.span(), "map.rows".into(), format!("tile ({}, {}) cannot reach tile ({}, {}): every walkable tile must reach every other", a.x, a.y, b.x, b.y));
        }

        // Economy.
        let mut prices = Vec::new();
        for (i, p) in raw.price.iter().enumerate() {
            let r = p.get_ref();
            if !sectors.iter().any(|s| s.name == r.sector) {
                bad(
                    p.span(),
                    format!("price[{i}].sector"),
                    format!("no sector named `{}`", r.sector),
                );
            }
            if r.cents < 0 {
                bad(p.span(), format!("price[{i}].cents"), "a price is not negative".into());
            }
            prices.push(Price { sector: r.sector.clone(), item: r.item.clone(), cents: r.cents });
        }
        let mut wages = Vec::new();
        for (i, w) in raw.wage.iter().enumerate() {
            let r = w.get_ref();
            if !sectors.iter().any(|s| s.name == r.sector) {
                bad(
                    w.span(),
                    format!("wage[{i}].sector"),
                    format!("no sector named `{}`", r.sector),
                );
            }
            if r.cents_per_hour < 0 {
                bad(w.span(), format!("wage[{i}].cents_per_hour"), "a wage is not negative".into());
            }
            wages.push(Wage { sector: r.sector.clone(), cents_per_hour: r.cents_per_hour });
        }

        // Personas.
        let mut personas: Vec<Persona> = Vec::new();
        for (i, p) in raw.persona.iter().enumerate() {
            let r = p.get_ref();
            let key = format!("persona[{i}]");
            if personas.iter().any(|o| o.name == r.name) {
                bad(p.span(), format!("{key}.name"), format!("two personas named `{}`", r.name));
            }
            let home = find_arena(&sectors, &r.home);
            if home.is_none() {
                bad(
                    p.span(),
                    format!("{key}.home"),
                    format!("`{}` is not a declared sector:arena", r.home),
                );
            }
            if let Some(w) = &r.workplace {
                if find_arena(&sectors, w).is_none() {
                    bad(
                        p.span(),
                        format!("{key}.workplace"),
                        format!("`{w}` is not a declared sector:arena"),
                    );
                }
            }
            if r.cash_cents < 0 {
                bad(p.span(), format!("{key}.cash_cents"), "cash is not negative".into());
            }
            if !STRATEGIES.contains(&r.strategy.as_str()) {
                bad(
                    p.span(),
                    format!("{key}.strategy"),
                    format!("`{}` is not one of {}", r.strategy, STRATEGIES.join(", ")),
                );
            }
            if let Some(c) = &r.currently {
                if c.trim().is_empty() {
                    bad(p.span(), format!("{key}.currently"), "`currently` is empty".into());
                } else if c.contains('\n') {
                    bad(p.span(), format!("{key}.currently"), "`currently` is one line".into());
                } else if c.chars().count() > CURRENTLY_CHARS {
                    bad(
                        p.span(),
                        format!("{key}.currently"),
                        format!("`currently` is longer than {CURRENTLY_CHARS} characters"),
                    );
                }
            }
            if let Some(problem) = r.model.as_deref().and_then(model_name_problem) {
                bad(p.span(), format!("{key}.model"), problem);
            }
            if let Some(g) = &r.goal {
                if g.trim().is_empty() {
                    bad(p.span(), format!("{key}.goal"), "`goal` is empty".into());
                } else if g.contains('\n') {
                    bad(p.span(), format!("{key}.goal"), "`goal` is one line".into());
                } else if g.chars().count() > GOAL_CHARS {
                    bad(
                        p.span(),
                        format!("{key}.goal"),
                        format!("`goal` is longer than {GOAL_CHARS} characters"),
                    );
                }
            }
            let planning = r.planning.clone().unwrap_or_else(|| PLANNING_MODULES[0].to_owned());
            if !PLANNING_MODULES.contains(&planning.as_str()) {
                bad(
                    p.span(),
                    format!("{key}.planning"),
                    format!("`{planning}` is not one of {}", PLANNING_MODULES.join(", ")),
                );
            } else if planning == "goal_qa" && r.goal.is_none() {
                bad(
                    p.span(),
                    format!("{key}.planning"),
                    "`goal_qa` plans toward the persona's life goal: give it a `goal`".into(),
                );
            }
            let memory = r.memory.clone().unwrap_or_else(|| MEMORY_MODULES[0].to_owned());
            if !MEMORY_MODULES.contains(&memory.as_str()) {
                bad(
                    p.span(),
                    format!("{key}.memory"),
                    format!("`{memory}` is not one of {}", MEMORY_MODULES.join(", ")),
                );
            }
            let measure = r.measure.as_ref().and_then(|m| {
                let at = format!("{key}.measure");
                let given = [
                    m.earn_cents.is_some(),
                    m.buy.is_some(),
                    m.meet.is_some(),
                    m.found.is_some(),
                    m.hire.is_some(),
                ];
                if given.iter().filter(|g| **g).count() != 1 {
                    bad(p.span(), at, "name one of earn_cents, buy, meet, found or hire".into());
                    return None;
                }
                if r.goal.is_none() {
                    bad(
                        p.span(),
                        at.clone(),
                        "a measure counts progress toward a `goal`: give one".into(),
                    );
                }
                if m.times.is_some() && m.buy.is_none() {
                    bad(p.span(), at.clone(), "`times` counts purchases: give `buy`".into());
                }
                if let Some(cents) = m.earn_cents {
                    if cents <= 0 {
                        bad(p.span(), at, "`earn_cents` is more than 0".into());
                        return None;
                    }
                    return Some(Measure::Earn { cents });
                }
                if let Some(count) = m.found.or(m.hire) {
                    if count == 0 {
                        bad(p.span(), at, "`found` and `hire` count from 1".into());
                        return None;
                    }
                    if raw.mayor.as_ref().is_none_or(|x| x.get_ref().who.trim() != r.name.trim()) {
                        bad(
                            p.span(),
                            at,
                            "`found` and `hire` count the mayor's acts: this persona is not the town's `[mayor] who`".into(),
                        );
                        return None;
                    }
                    return Some(if m.found.is_some() {
                        Measure::Found { count }
                    } else {
                        Measure::Hire { count }
                    });
                }
                if let Some(item) = &m.buy {
                    let item = item.trim();
                    let times = m.times.unwrap_or(1);
                    if item.is_empty() || item.contains('\n') || times == 0 {
                        bad(p.span(), at, "`buy` names an item, bought at least once".into());
                        return None;
                    }
                    return Some(Measure::Buy { item: item.to_owned(), times });
                }
                let name = m.meet.as_deref().unwrap_or_default().trim();
                let known = raw.persona.iter().any(|o| o.get_ref().name.trim() == name);
                if name == r.name.trim() || !known {
                    bad(
                        p.span(),
                        at,
                        format!("`meet` names another persona of the town, not `{name}`"),
                    );
                    return None;
                }
                Some(Measure::Meet { name: name.to_owned() })
            });
            let mut hosts = Vec::new();
            for (h, e) in r.hosts.iter().enumerate() {
                let at = format!("{key}.hosts[{h}]");
                let what = e.what.trim();
                if what.is_empty() || what.contains('\n') {
                    bad(p.span(), format!("{at}.what"), "`what` is one line, not empty".into());
                } else if what.chars().count() > HOSTED_WHAT_CHARS {
                    bad(
                        p.span(),
                        format!("{at}.what"),
                        format!("`what` is longer than {HOSTED_WHAT_CHARS} characters"),
                    );
                }
                let known = match e.place.split_once(':') {
                    Some(_) => find_arena(&sectors, &e.place).is_some(),
                    None => sectors.iter().any(|s| s.name == e.place),
                };
                if !known {
                    bad(
                        p.span(),
                        format!("{at}.place"),
                        format!("`{}` is not a declared sector or sector:arena", e.place),
                    );
                }
                let when = |field: &str, text: &str, bad: &mut dyn FnMut(String, String)| {
                    let secs = parse_start(text);
                    if secs.is_none() {
                        bad(format!("{at}.{field}"), format!("`{text}` is not `day<N> HH:MM`"));
                    }
                    secs
                };
                let mut say = |key: String, message: String| bad(p.span(), key, message);
                let (from, until) =
                    (when("from", &e.from, &mut say), when("until", &e.until, &mut say));
                if let (Some(from), Some(until)) = (from, until) {
                    match u32::try_from(until.saturating_sub(from)) {
                        Ok(d) if until > from && d <= 86_400 => hosts.push(Hosted {
                            what: what.to_owned(),
                            place: e.place.clone(),
                            start_secs: from,
                            duration_secs: d,
                        }),
                        _ => say(
                            format!("{at}.until"),
                            "`until` is after `from`, at most a day later".into(),
                        ),
                    }
                }
            }
            if r.seed.split(';').all(|s| s.trim().is_empty()) {
                bad(p.span(), format!("{key}.seed"), "the seed paragraph is empty".into());
            }
            let spawn = match r.spawn {
                Some([x, y]) => Tile { x, y },
                None => home
                    .and_then(|(si, ai)| sectors.get(si)?.arenas.get(ai)?.tiles.first().copied())
                    .unwrap_or_default(),
            };
            if !grid.is_walkable(spawn) {
                bad(
                    p.span(),
                    format!("{key}.spawn"),
                    format!("({}, {}) is not a walkable tile", spawn.x, spawn.y),
                );
            }
            personas.push(Persona {
                name: r.name.clone(),
                age: r.age,
                innate: r.innate.clone(),
                seed: r.seed.clone(),
                home: r.home.clone(),
                workplace: r.workplace.clone(),
                cash_cents: r.cash_cents,
                spawn,
                strategy: r.strategy.clone(),
                currently: r.currently.as_ref().map(|c| c.trim().to_owned()),
                hosts,
                model: r.model.clone(),
                goal: r.goal.as_ref().map(|g| g.trim().to_owned()),
                measure,
                planning,
                memory,
            });
        }

        let mayor = raw.mayor.as_ref().map(|m| {
            let span = m.span();
            let m = m.get_ref();
            let who = if m.who == PLAYER {
                MayorWho::Player
            } else {
                if !personas.iter().any(|p| p.name == m.who) {
                    bad(
                        span.clone(),
                        "mayor.who".into(),
                        format!(
                            "`{}` is neither a persona nor `{PLAYER}` (the person at the viewer)",
                            m.who
                        ),
                    );
                }
                MayorWho::Agent(m.who.clone())
            };
            if m.funds_cents < 0 {
                bad(
                    span.clone(),
                    "mayor.funds_cents".into(),
                    "the treasury is not negative".into(),
                );
            }
            if m.found_cents <= 0 {
                bad(
                    span.clone(),
                    "mayor.found_cents".into(),
                    "founding a business costs more than 0".into(),
                );
            }
            let mut sites: Vec<Site> = Vec::new();
            for site in &m.site {
                if site.name.trim().is_empty() || sites.iter().any(|s| s.name == site.name) {
                    bad(
                        span.clone(),
                        "mayor.site".into(),
                        format!("site `{}`: a site's name is not empty and is its own", site.name),
                    );
                }
                // (A building may grow the map: whether one fits is asked when it is founded.)
                let origin = Tile { x: site.at[0], y: site.at[1] };
                sites.push(Site { name: site.name.clone(), origin });
            }
            Mayor { who, funds_cents: m.funds_cents, found_cents: m.found_cents, sites }
        });
        if !problems.is_empty() {
            return Err(TownError { file: file.to_owned(), problems });
        }
        let name = raw.town.name.into_inner();
        let (tree, root) = environment_tree(&name, &sectors);
        Ok(Definition {
            name,
            start_secs,
            seconds_per_step,
            date,
            perception: Perception {
                vision_radius_tiles: perception.vision_radius_tiles,
                attention_bandwidth: perception.attention_bandwidth,
                retention_steps: perception.retention_steps,
            },
            grid,
            sectors,
            tree,
            root,
            prices,
            wages,
            personas,
            mayor,
            source: source.to_owned(),
        })
    }

    /// How many objects the town holds.
    pub fn n_objects(&self) -> usize {
        self.sectors.iter().flat_map(|s| &s.arenas).map(|a| a.objects.len()).sum()
    }

    /// The `sector:arena` a tile belongs to, if any.
    pub fn address_of(&self, tile: Tile) -> Option<String> {
        let (si, ai) = self.grid.arena_at(tile)?;
        let sector = self.sectors.get(si)?;
        Some(format!("{}:{}", sector.name, sector.arenas.get(ai)?.name))
    }
}

fn check_name(
    bad: &mut impl FnMut(std::ops::Range<usize>, String, String),
    span: std::ops::Range<usize>,
    key: String,
    name: &str,
) {
    if name.trim().is_empty() {
        bad(span, key, "a name is not empty".into());
    } else if name.contains(':') {
        bad(span, key, format!("`{name}` contains `:`, which joins addresses"));
    }
}

/// The (sector, arena) indexes of a `sector:arena` address.
pub fn find_arena(sectors: &[Sector], address: &str) -> Option<(usize, usize)> {
    let (sector, arena) = address.split_once(':')?;
    let si = sectors.iter().position(|s| s.name == sector)?;
    let ai = sectors.get(si)?.arenas.iter().position(|a| a.name == arena)?;
    Some((si, ai))
}

/// Where an address is, in words for people: the address, or "outdoors" for the open
/// ground (which has none), as `show`, `transcript`, the timeline and the viewer word it.
pub fn place_words(address: &str) -> &str {
    if address.trim().is_empty() {
        "outdoors"
    } else {
        address
    }
}

/// "at ADDRESS", or "outdoors" for the open ground (see [`place_words`]).
pub fn at_place(address: &str) -> String {
    if address.trim().is_empty() {
        "outdoors".to_owned()
    } else {
        format!("at {address}")
    }
}

fn parse_start(text: &str) -> Option<u64> {
    let rest = text.trim().strip_prefix("day")?.trim_start();
    let (day, clock) = rest.split_once(char::is_whitespace)?;
    let (h, m) = clock.trim().split_once(':')?;
    let (day, h, m): (u64, u64, u64) = (day.parse().ok()?, h.parse().ok()?, m.parse().ok()?);
    (h < 24 && m < 60).then(|| day.checked_mul(86_400)?.checked_add(h * 3600 + m * 60))?
}

fn environment_tree(name: &str, sectors: &[Sector]) -> (DiGraph<Place, ()>, NodeIndex) {
    let mut tree = DiGraph::new();
    let root = tree.add_node(Place::Town(name.to_owned()));
    for (si, sector) in sectors.iter().enumerate() {
        let s = tree.add_node(Place::Sector(si));
        tree.add_edge(root, s, ());
        for (ai, arena) in sector.arenas.iter().enumerate() {
            let a = tree.add_node(Place::Arena(si, ai));
            tree.add_edge(s, a, ());
            for oi in 0..arena.objects.len() {
                let o = tree.add_node(Place::Object(si, ai, oi));
                tree.add_edge(a, o, ());
            }
        }
    }
    (tree, root)
}

/// A `YYYY-MM-DD` date, checked (month lengths and leap years).
fn parse_date(text: &str) -> Option<(i32, u32, u32)> {
    let mut parts = text.trim().splitn(3, '-');
    let year: i32 = parts.next()?.parse().ok()?;
    let month: u32 = parts.next()?.parse().ok()?;
    let day: u32 = parts.next()?.parse().ok()?;
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    (1..=days).contains(&day).then_some((year, month, day))
}

/// Days from 1970-01-01 to a civil date (proleptic Gregorian).
fn days_from_civil((y, m, d): (i32, u32, u32)) -> i64 {
    let y = i64::from(y) - i64::from(m <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date `days` after 1970-01-01.
fn civil_from_days(days: i64) -> (i32, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y as i32, m, d)
}

impl Definition {
    /// Day `day` of the run in words: "Friday 13 February 2026" when the town names the date
    /// of day 0, else "day 3".
    pub fn day_words(&self, day: u64) -> String {
        const WEEKDAYS: [&str; 7] =
            ["Thursday", "Friday", "Saturday", "Sunday", "Monday", "Tuesday", "Wednesday"];
        const MONTHS: [&str; 12] = [
            "January",
            "February",
            "March",
            "April",
            "May",
            "June",
            "July",
            "August",
            "September",
            "October",
            "November",
            "December",
        ];
        let Some(first) = self.date else { return format!("day {day}") };
        let days = days_from_civil(first) + i64::try_from(day).unwrap_or(0);
        let (y, m, d) = civil_from_days(days);
        let weekday = WEEKDAYS[days.rem_euclid(7) as usize];
        format!("{weekday} {d} {} {y}", MONTHS[(m - 1) as usize])
    }

    /// A moment of the run in words, for prompts: "Friday 13 February 2026, 07:01" (a
    /// model told "day 0 07:01:10" is told nothing of the weekday).
    pub fn moment_words(&self, secs: u64) -> String {
        let day = self.day_words(secs / 86_400);
        format!("{day}, {:02}:{:02}", secs / 3600 % 24, secs / 60 % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_open_ground_is_worded_outdoors() {
        assert_eq!(place_words(""), "outdoors");
        assert_eq!(at_place(" "), "outdoors");
        assert_eq!(place_words("Marigold café:counter"), "Marigold café:counter");
        assert_eq!(at_place("Marigold café:counter"), "at Marigold café:counter");
    }

    #[test]
    fn dates_are_checked_and_days_are_named() {
        assert_eq!(parse_date("2026-02-13"), Some((2026, 2, 13)));
        for bad in ["2026-02-29", "2026-13-01", "2026-4-31", "13/02/2026", ""] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
        assert_eq!(parse_date("2000-02-29"), Some((2000, 2, 29)));
        for days in [-800_000i64, -1, 0, 1, 20_497, 800_000] {
            assert_eq!(days_from_civil(civil_from_days(days)), days);
        }
        assert_eq!(days_from_civil((1970, 1, 1)), 0);
        let town =
            Definition::parse("t.toml", include_str!("../../../engine/towns/willowmere.toml"))
                .unwrap();
        assert_eq!(town.date, Some((2026, 2, 13)));
        assert_eq!(town.day_words(0), "Friday 13 February 2026");
        assert_eq!(town.day_words(3), "Monday 16 February 2026");
        assert_eq!(town.day_words(17), "Monday 2 March 2026");
        assert_eq!(town.moment_words(86_400 + 7 * 3600 + 70), "Saturday 14 February 2026, 07:01");
        let undated = Definition { date: None, ..town };
        assert_eq!(undated.day_words(2), "day 2");
        assert_eq!(undated.moment_words(3600 * 23 + 59 * 60 + 59), "day 0, 23:59");
    }
}
