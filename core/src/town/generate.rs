//! `hamlet town generate`: a town of any size, from a seed, as a town file.
//!
//! The town is a grid of lots with streets between them. Each lot holds one walled
//! building: a home (a bedroom and a kitchen, for a household of one to four), a workplace
//! (a café, a market, an office, a college, a store or a bar: two rooms, most of them
//! public) or a park. Personas get a name, an age, three traits, a home, most of them a
//! job, and a seed paragraph that ties them to their household, their neighbours, their
//! colleagues and an old friend. The seeded situations of the paper come with them: a
//! party at a café on the first evening (one for every hundred residents) and a candidacy
//! for the town council.
//!
//! Everything comes from one [`SimRng`] stream of the seed, in a fixed order: the same
//! seed and size give the same file, byte for byte. The file passes `hamlet town check`
//! (a test holds it to that for many sizes).

use std::fmt::Write as _;

use crate::rng::SimRng;

/// What to generate.
#[derive(Clone, Debug)]
pub struct Spec {
    /// How many personas.
    pub agents: usize,
    /// The seed: the same seed and size give the same file.
    pub seed: u64,
    /// The town's name.
    pub name: String,
}

/// Most personas one generated town may have.
pub const MAX_AGENTS: usize = 5_000;

/// A building's footprint on the map, walls included, and the street between lots.
const LOT_W: usize = 14;
const LOT_H: usize = 8;
const STREET: usize = 2;

const FIRST_NAMES: &[&str] = &[
    "Ada", "Alban", "Alma", "Anselm", "Aurora", "Basil", "Beatrix", "Bram", "Briony", "Cato",
    "Celia", "Cyrus", "Dara", "Dorian", "Edda", "Elio", "Elspeth", "Emeric", "Fenna", "Florin",
    "Greta", "Gideon", "Hale", "Hester", "Ines", "Ivo", "Jolene", "Jonah", "Kasimir", "Kit",
    "Lena", "Linus", "Lorna", "Magnus", "Maren", "Milo", "Nadia", "Nico", "Noor", "Odile", "Orrin",
    "Pella", "Piers", "Quill", "Rhea", "Ronan", "Saoirse", "Silas", "Solveig", "Tamar", "Teo",
    "Thea", "Ulric", "Una", "Vesna", "Vidar", "Wren", "Xavi", "Yara", "Zeno", "Agnes", "Bertil",
    "Clio", "Desmond", "Esme", "Falk", "Gwen", "Hugo", "Ilse", "Jasper",
];
const SURNAME_HEADS: &[&str] = &[
    "Ash", "Birch", "Black", "Bram", "Brook", "Cald", "Cold", "Crane", "Dun", "Elder", "Fair",
    "Fern", "Glen", "Gold", "Hart", "Hazel", "Holt", "Kings", "Lark", "Marsh", "Mill", "Moor",
    "Oak", "Pen", "Red", "Rook", "Stan", "Thorn", "Wex", "Wild",
];
const SURNAME_TAILS: &[&str] = &[
    "bury", "combe", "croft", "dale", "field", "ford", "gate", "hallow", "ham", "hurst", "ley",
    "low", "more", "ridge", "stead", "ton", "well", "wick", "wood", "worth",
];
const PLACE_WORDS: &[&str] = &[
    "Marigold",
    "Fernside",
    "Thistle",
    "Crooked Lamp",
    "Millbrook",
    "Reedbank",
    "Bluebell",
    "Copper Kettle",
    "Foxglove",
    "Hollyhock",
    "Juniper",
    "Kestrel",
    "Lantern",
    "Meadowsweet",
    "Nettle",
    "Old Mill",
    "Primrose",
    "Quayside",
    "Rosehip",
    "Saltmarsh",
    "Tansy",
    "Upland",
    "Vetch",
    "Wagtail",
    "Yarrow",
    "Alder",
    "Bramble",
    "Clover",
    "Dovecote",
    "Elm Row",
];
const TRAITS: &[&str] = &[
    "warm",
    "curious",
    "patient",
    "shy",
    "talkative",
    "meticulous",
    "generous",
    "stubborn",
    "cheerful",
    "thoughtful",
    "ambitious",
    "easygoing",
    "sharp",
    "principled",
    "forgetful",
    "energetic",
    "reserved",
    "sociable",
    "kind",
    "organised",
    "restless",
    "witty",
    "gentle",
    "proud",
    "careful",
    "hopeful",
    "blunt",
    "dreamy",
    "loyal",
    "practical",
];

/// One kind of workplace: its sector kind, name suffix, rooms (name, public, objects),
/// jobs, wage and what it sells.
struct Trade {
    kind: &'static str,
    suffix: &'static str,
    rooms: [(&'static str, bool, &'static [&'static str]); 2],
    jobs: &'static [&'static str],
    cents_per_hour: i64,
    sells: &'static [(&'static str, i64)],
}

const TRADES: &[Trade] = &[
    Trade {
        kind: "cafe",
        suffix: "café",
        rooms: [
            ("dining room", true, &["window table", "long table", "notice board"]),
            ("counter", true, &["coffee machine", "cash register", "pastry case"]),
        ],
        jobs: &["barista", "cook", "waiter"],
        cents_per_hour: 1700,
        sells: &[("coffee", 350), ("pot of tea", 300), ("scone", 325), ("sandwich", 750)],
    },
    Trade {
        kind: "market",
        suffix: "market",
        rooms: [
            ("grocery hall", true, &["produce stand", "bread shelf", "checkout counter"]),
            ("storeroom", false, &["stock shelves", "delivery crates"]),
        ],
        jobs: &["grocer", "cashier", "stock clerk"],
        cents_per_hour: 1900,
        sells: &[("loaf of bread", 400), ("dozen eggs", 450), ("bag of apples", 500)],
    },
    Trade {
        kind: "office",
        suffix: "offices",
        rooms: [
            ("front desk", true, &["reception desk", "waiting bench"]),
            ("back office", false, &["desk", "filing cabinet", "printer"]),
        ],
        jobs: &["clerk", "accountant", "surveyor"],
        cents_per_hour: 2100,
        sells: &[],
    },
    Trade {
        kind: "college",
        suffix: "college",
        rooms: [
            ("lecture hall", true, &["lectern", "blackboard", "benches"]),
            ("library", true, &["reading table", "bookshelves", "card catalogue"]),
        ],
        jobs: &["teacher", "librarian", "lecturer"],
        cents_per_hour: 2600,
        sells: &[],
    },
    Trade {
        kind: "store",
        suffix: "supply store",
        rooms: [
            ("shop floor", true, &["tool wall", "paint shelf", "counter"]),
            ("stockroom", false, &["shelving", "crates"]),
        ],
        jobs: &["shopkeeper", "assistant"],
        cents_per_hour: 1750,
        sells: &[("hammer", 1800), ("box of nails", 450), ("seed packet", 300)],
    },
    Trade {
        kind: "bar",
        suffix: "bar",
        rooms: [
            ("bar room", true, &["bar counter", "beer taps", "jukebox"]),
            ("games room", true, &["pool table", "dartboard"]),
        ],
        jobs: &["bartender", "landlord"],
        cents_per_hour: 1650,
        sells: &[("pint of ale", 600), ("glass of cider", 550)],
    },
];

/// What stands on a lot.
enum Lot {
    Home { sector: String, residents: Vec<usize> },
    Work { sector: String, trade: usize },
    Park { sector: String },
}

struct Person {
    name: String,
    age: u16,
    traits: Vec<&'static str>,
    lot: usize,
    /// (lot, room index, job title)
    job: Option<(usize, usize, &'static str)>,
    statements: Vec<String>,
}

fn pick<'a, T>(rng: &mut SimRng, items: &'a [T]) -> &'a T {
    &items[rng.int_inclusive(0, items.len() as u64 - 1) as usize]
}

fn shuffle<T>(rng: &mut SimRng, items: &mut [T]) {
    for i in (1..items.len()).rev() {
        items.swap(i, rng.int_inclusive(0, i as u64) as usize);
    }
}

/// The legend key of arena number `i`: CJK ideographs from U+4E00, one character each,
/// so that a town of thousands of rooms still has a key per room.
fn key(i: usize) -> char {
    char::from_u32(0x4E00 + i as u32).unwrap_or('?')
}

/// The town file for `spec`.
///
/// # Panics
/// When `spec.agents` is 0 or more than [`MAX_AGENTS`] (callers check it first).
pub fn generate(spec: &Spec) -> String {
    assert!(
        (1..=MAX_AGENTS).contains(&spec.agents),
        "a generated town has 1 to {MAX_AGENTS} agents"
    );
    let mut rng = SimRng::stream(spec.seed, &["town", "generate"]);
    let n = spec.agents;

    // Households: sizes 1 to 4 until everyone has a home.
    let mut sizes = Vec::new();
    let mut left = n;
    while left > 0 {
        let size = (rng.int_inclusive(1, 4) as usize).min(left);
        sizes.push(size);
        left -= size;
    }
    // One workplace per ten residents (at least one café), one park per hundred.
    let n_work = n.div_ceil(10).max(1);
    let n_parks = n.div_ceil(100);

    // Surnames: one per household, all different (head × tail gives 600; beyond that a
    // number tells households apart).
    let mut surnames: Vec<String> = SURNAME_HEADS
        .iter()
        .flat_map(|h| SURNAME_TAILS.iter().map(move |t| format!("{h}{t}")))
        .collect();
    shuffle(&mut rng, &mut surnames);
    let mut place_words: Vec<&str> = PLACE_WORDS.to_vec();
    shuffle(&mut rng, &mut place_words);

    // The lots, in a shuffled order so homes and workplaces mix.
    let mut lots: Vec<Lot> = Vec::new();
    let mut people: Vec<Person> = Vec::new();
    for (h, &size) in sizes.iter().enumerate() {
        let surname = match surnames.get(h) {
            Some(s) => s.clone(),
            None => format!("{} {}", surnames[h % surnames.len()], h / surnames.len() + 1),
        };
        let mut firsts: Vec<&str> = FIRST_NAMES.to_vec();
        shuffle(&mut rng, &mut firsts);
        let mut residents = Vec::new();
        for first in firsts.into_iter().take(size) {
            residents.push(people.len());
            let mut traits: Vec<&'static str> = TRAITS.to_vec();
            shuffle(&mut rng, &mut traits);
            traits.truncate(3);
            people.push(Person {
                name: format!("{first} {surname}"),
                age: rng.int_inclusive(19, 78) as u16,
                traits,
                lot: lots.len(),
                job: None,
                statements: Vec::new(),
            });
        }
        lots.push(Lot::Home { sector: format!("{surname} house"), residents });
    }
    let word = |i: usize| -> String {
        let w = place_words[i % place_words.len()];
        match i / place_words.len() {
            0 => w.to_string(),
            k => format!("{w} {}", k + 1),
        }
    };
    for w in 0..n_work {
        // The first workplace is a café (the party needs one); then every trade in turn.
        let trade = if w == 0 { 0 } else { rng.int_inclusive(0, TRADES.len() as u64 - 1) as usize };
        lots.push(Lot::Work { sector: format!("{} {}", word(w), TRADES[trade].suffix), trade });
    }
    for p in 0..n_parks {
        lots.push(Lot::Park { sector: format!("{} park", word(n_work + p)) });
    }
    // Where each lot stands: a shuffled order over the grid.
    let n_lots = lots.len();
    let cols = (n_lots as f64).sqrt().ceil() as usize;
    let mut places: Vec<usize> = (0..n_lots).collect();
    shuffle(&mut rng, &mut places);
    let origin = |lot: usize| {
        let slot = places[lot];
        (1 + (slot % cols) * (LOT_W + STREET), 1 + (slot / cols) * (LOT_H + STREET))
    };

    // Jobs: most adults work somewhere; the rest are retired.
    let work_lots: Vec<usize> =
        (0..n_lots).filter(|&l| matches!(lots[l], Lot::Work { .. })).collect();
    for person in &mut people {
        if person.age >= 68 && !rng.chance(1, 4) {
            continue;
        }
        let lot = *pick(&mut rng, &work_lots);
        let Lot::Work { trade, .. } = lots[lot] else { continue };
        let t = &TRADES[trade];
        let room = rng.int_inclusive(0, 1) as usize;
        person.job = Some((lot, room, *pick(&mut rng, t.jobs)));
    }
    let sector_of = |lots: &[Lot], lot: usize| -> String {
        match &lots[lot] {
            Lot::Home { sector, .. } | Lot::Work { sector, .. } | Lot::Park { sector } => {
                sector.clone()
            }
        }
    };

    // Seed paragraphs.
    for i in 0..people.len() {
        let name = people[i].name.clone();
        let home = sector_of(&lots, people[i].lot);
        let mut says = Vec::new();
        match people[i].job {
            Some((lot, room, job)) => {
                let Lot::Work { trade, .. } = lots[lot] else { unreachable!() };
                let article = if job.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
                says.push(format!(
                    "{name} works as {article} {job} at the {} of {}",
                    TRADES[trade].rooms[room].0,
                    sector_of(&lots, lot)
                ));
            }
            None => says.push(format!("{name} is retired and likes to walk in the park")),
        }
        let Lot::Home { residents, .. } = &lots[people[i].lot] else { unreachable!() };
        let others: Vec<&str> =
            residents.iter().filter(|&&r| r != i).map(|&r| people[r].name.as_str()).collect();
        match others.as_slice() {
            [] => says.push(format!("{name} lives alone in {home}")),
            [one] => says.push(format!("{name} lives in {home} with {one}")),
            [rest @ .., last] => {
                says.push(format!("{name} lives in {home} with {} and {last}", rest.join(", ")))
            }
        }
        people[i].statements = says;
    }
    // Colleagues: everyone at a workplace knows the one listed before them there.
    let mut last_at: Vec<Option<usize>> = vec![None; n_lots];
    for i in 0..people.len() {
        if let Some((lot, _, _)) = people[i].job {
            if let Some(j) = last_at[lot] {
                let (a, b) = (people[i].name.clone(), people[j].name.clone());
                let at = sector_of(&lots, lot);
                people[i].statements.push(format!("{a} and {b} work together at {at}"));
                people[j].statements.push(format!("{b} and {a} work together at {at}"));
            }
            last_at[lot] = Some(i);
        }
    }
    // Neighbours: households on lots next to each other in the grid.
    let home_lots: Vec<usize> =
        (0..n_lots).filter(|&l| matches!(lots[l], Lot::Home { .. })).collect();
    let mut at_slot = vec![None; cols * n_lots.div_ceil(cols)];
    for &l in &home_lots {
        at_slot[places[l]] = Some(l);
    }
    for &l in &home_lots {
        let right = places[l] + 1;
        if right.is_multiple_of(cols) {
            continue;
        }
        let Some(Some(other)) = at_slot.get(right).copied() else { continue };
        let (Lot::Home { residents: a, .. }, Lot::Home { residents: b, .. }) =
            (&lots[l], &lots[other])
        else {
            continue;
        };
        let (a, b) = (a[0], b[0]);
        let (na, nb) = (people[a].name.clone(), people[b].name.clone());
        people[a].statements.push(format!("{na} and {nb} are next-door neighbours"));
        people[b].statements.push(format!("{nb} and {na} are next-door neighbours"));
    }
    // An old friend anywhere in town.
    if n > 1 {
        for i in 0..n {
            let j = rng.int_inclusive(0, n as u64 - 1) as usize;
            if j == i {
                continue;
            }
            let (a, b) = (people[i].name.clone(), people[j].name.clone());
            people[i].statements.push(format!("{a} and {b} have been friends for years"));
        }
    }
    // The seeded situations: parties at cafés on the first evening, a council candidacy.
    let cafe_lots: Vec<usize> = work_lots
        .iter()
        .copied()
        .filter(|&l| matches!(lots[l], Lot::Work { trade: 0, .. }))
        .collect();
    let n_parties = n.div_ceil(100);
    let mut hosts: Vec<usize> = (0..n).collect();
    shuffle(&mut rng, &mut hosts);
    for (k, &host) in hosts.iter().take(n_parties).enumerate() {
        let cafe = sector_of(&lots, cafe_lots[k % cafe_lots.len()]);
        let name = people[host].name.clone();
        people[host].statements.extend([
            format!(
                "{name} is planning a party at {cafe} this Friday evening, 13 February, from \
                 17:00 to 19:00"
            ),
            format!("{name} wants to invite friends, neighbours and colleagues to the party"),
        ]);
    }
    if let Some(&candidate) = hosts.get(n_parties) {
        let name = people[candidate].name.clone();
        people[candidate].statements.extend([
            format!("{name} is running for the {} town council", spec.name),
            format!("The council election is on day 3, and {name} hopes to win many votes"),
        ]);
    }

    // The map: streets everywhere, then each lot's building.
    let rows_n = n_lots.div_ceil(cols);
    let width = 1 + cols * (LOT_W + STREET) + 1 - STREET + 1;
    let height = 1 + rows_n * (LOT_H + STREET) + 1 - STREET + 1;
    let mut grid = vec![vec!['.'; width]; height];
    // Per lot, its arenas: (name, public, objects, first column, last column).
    type Room = (&'static str, bool, Vec<String>, usize, usize);
    let mut rooms_of: Vec<Vec<Room>> = Vec::new();
    let mut legend: Vec<(char, String)> = Vec::new();
    for (l, lot) in lots.iter().enumerate() {
        let (ox, oy) = origin(l);
        for row in grid.iter_mut().skip(oy).take(LOT_H) {
            for cell in row.iter_mut().skip(ox).take(LOT_W) {
                *cell = '#';
            }
        }
        let rooms: Vec<Room> = match lot {
            Lot::Home { residents, .. } => {
                let beds = (1..=residents.len()).map(|k| format!("bed {k}"));
                vec![
                    ("bedroom", false, beds.chain(["wardrobe".into()]).collect(), ox + 1, ox + 6),
                    (
                        "kitchen",
                        false,
                        ["stove", "fridge", "kitchen table"].map(String::from).to_vec(),
                        ox + 8,
                        ox + LOT_W - 2,
                    ),
                ]
            }
            Lot::Work { trade, .. } => {
                let t = &TRADES[*trade];
                let [(a, ap, ao), (b, bp, bo)] = t.rooms;
                vec![
                    (a, ap, ao.iter().map(|s| s.to_string()).collect(), ox + 1, ox + 6),
                    (b, bp, bo.iter().map(|s| s.to_string()).collect(), ox + 8, ox + LOT_W - 2),
                ]
            }
            Lot::Park { .. } => vec![(
                "lawn",
                true,
                ["fountain", "bench", "flower beds"].map(String::from).to_vec(),
                ox + 1,
                ox + LOT_W - 2,
            )],
        };
        let sector = sector_of(&lots, l);
        for room in &rooms {
            let c = key(legend.len());
            legend.push((c, format!("{sector}:{}", room.0)));
            for row in grid.iter_mut().take(oy + LOT_H - 1).skip(oy + 1) {
                for cell in row.iter_mut().take(room.4 + 1).skip(room.3) {
                    *cell = c;
                }
            }
        }
        // Doors: from the first room to the street below, between the rooms, and a park's
        // gate.
        let first_key = grid[oy + 1][ox + 1];
        grid[oy + LOT_H - 1][ox + 3] = first_key;
        if rooms.len() == 2 {
            grid[oy + LOT_H / 2][ox + 7] = first_key;
        } else {
            grid[oy + LOT_H - 1][ox + 4] = first_key;
        }
        rooms_of.push(rooms);
    }
    // The file.
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# {} — a town of {n} generated by `hamlet town generate --agents {n} --seed {}`.\n\
         # The same seed and size give this file again, byte for byte.\n#\n\
         # {} lots: {} homes, {} workplaces, {} parks; a {width}×{height} map. Arena floors\n\
         # are CJK ideographs from U+4E00, one per room. Format: engine/towns/README.md.\n",
        spec.name,
        spec.seed,
        n_lots,
        sizes.len(),
        n_work,
        n_parks
    );
    let _ = writeln!(
        out,
        "[town]\nname = \"{}\"\nstart = \"day0 07:00\"\ndate = \"2026-02-13\"\n\
         seconds_per_step = 10\n",
        spec.name
    );
    out.push_str("[map]\nrows = [\n");
    for row in &grid {
        let _ = writeln!(out, "  \"{}\",", row.iter().collect::<String>());
    }
    out.push_str("]\n\n[map.legend]\n");
    for (c, target) in &legend {
        let _ = writeln!(out, "\"{c}\" = \"{target}\"");
    }
    for (l, rooms) in rooms_of.iter().enumerate() {
        let kind = match &lots[l] {
            Lot::Home { .. } => "home",
            Lot::Work { trade, .. } => TRADES[*trade].kind,
            Lot::Park { .. } => "park",
        };
        let (_, oy) = origin(l);
        let _ =
            writeln!(out, "\n[[sector]]\nname = \"{}\"\nkind = \"{kind}\"", sector_of(&lots, l));
        for (name, public, objects, x0, x1) in rooms {
            let _ = writeln!(out, "\n  [[sector.arena]]\n  name = \"{name}\"");
            if *public {
                out.push_str("  public = true\n");
            }
            out.push_str("  objects = [\n");
            for (i, object) in objects.iter().enumerate() {
                // Along the room's top row, then its second.
                let span = x1 - x0 + 1;
                let (x, y) = (x0 + i % span, oy + 1 + i / span);
                let states = match object.as_str() {
                    o if o.starts_with("bed") => r#"["made", "being slept in", "unmade"]"#,
                    "stove" => r#"["idle", "cooking"]"#,
                    "fridge" | "wardrobe" | "filing cabinet" => r#"["closed", "open"]"#,
                    "coffee machine" => r#"["idle", "brewing coffee"]"#,
                    "jukebox" => r#"["silent", "playing music"]"#,
                    "fountain" => r#"["flowing", "being admired"]"#,
                    _ => r#"["idle", "in use"]"#,
                };
                let _ = writeln!(
                    out,
                    "    {{ name = \"{object}\", at = [{x}, {y}], states = {states} }},"
                );
            }
            out.push_str("  ]\n");
        }
    }
    for (l, lot) in lots.iter().enumerate() {
        if let Lot::Work { trade, .. } = lot {
            let t = &TRADES[*trade];
            let sector = sector_of(&lots, l);
            for (item, cents) in t.sells {
                let _ = writeln!(
                    out,
                    "\n[[price]]\nsector = \"{sector}\"\nitem = \"{item}\"\ncents = {cents}"
                );
            }
            let _ = writeln!(
                out,
                "\n[[wage]]\nsector = \"{sector}\"\ncents_per_hour = {}",
                t.cents_per_hour
            );
        }
    }
    for p in &people {
        let home = sector_of(&lots, p.lot);
        let (ox, oy) = origin(p.lot);
        let Lot::Home { residents, .. } = &lots[p.lot] else { unreachable!() };
        let nth = residents.iter().position(|&r| people[r].name == p.name).unwrap_or(0);
        let _ = writeln!(
            out,
            "\n[[persona]]\nname = \"{}\"\nage = {}\ninnate = [{}]\nseed = \"{}\"\n\
             home = \"{home}:bedroom\"",
            p.name,
            p.age,
            p.traits.iter().map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(", "),
            p.statements.join("; ")
        );
        if let Some((lot, room, _)) = p.job {
            let _ = writeln!(
                out,
                "workplace = \"{}:{}\"",
                sector_of(&lots, lot),
                rooms_of[lot][room].0
            );
        }
        let _ = writeln!(
            out,
            "cash_cents = {}\nspawn = [{}, {}]\nstrategy = \"full\"",
            rng.int_inclusive(20, 600) * 100,
            ox + 1 + nth,
            oy + 2
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::town::Definition;

    #[test]
    fn generated_towns_are_valid_and_the_same_for_the_same_seed() {
        for agents in [1, 2, 7, 10, 55, 100, 333] {
            let spec = Spec { agents, seed: 7, name: "Testbury".into() };
            let text = generate(&spec);
            let town = Definition::parse("generated.toml", &text)
                .unwrap_or_else(|e| panic!("{agents} agents: {:?}", e.problems));
            assert_eq!(town.personas.len(), agents);
            assert_eq!(text, generate(&spec), "{agents}: the same seed, the same file");
            let other = generate(&Spec { seed: 8, ..spec });
            assert_ne!(text, other, "{agents}: another seed, another town");
        }
    }
}
