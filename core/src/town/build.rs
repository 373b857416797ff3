//! Buildings added while a town runs (`Intervention::AddBuilding`): a copy of one of the
//! town's sectors — its rooms, walls, doors, objects and prices — placed with the
//! north-west corner of its walls at a tile. Where the copy reaches past the map's east or
//! south edge the map grows with open ground, one tile past the copy, so a town with no
//! room left can still grow on its outskirts.
//!
//! Pure: the loop and the viewer apply the same recorded interventions to the recorded
//! town and get the same map ([`recorded_town`]).

use hamlet_log::event::{Intervention, MayorAct, Tile};
use hamlet_log::{Body, Event};

use super::map::{Cell, Grid};
use super::{environment_tree, Arena, Definition, Object, Price, Sector};

/// The largest map a building may grow the town to, in tiles a side.
pub const MAX_SIDE: u16 = 1024;

impl Definition {
    /// Adds a copy of sector `template` named `name`, its walls' north-west corner at
    /// `origin`. Refused, changing nothing, when the template or a tile is wrong: every
    /// tile the copy covers must be open ground (or beyond the map's edge), and every
    /// walkable tile must still reach every other.
    pub fn add_building(&mut self, template: &str, name: &str, origin: Tile) -> Result<(), String> {
        let Some(ts) = self.sectors.iter().position(|s| s.name == template) else {
            let names: Vec<&str> = self.sectors.iter().map(|s| s.name.as_str()).collect();
            return Err(format!(
                "no sector `{template}` to copy; the town has: {}",
                names.join(", ")
            ));
        };
        if name.trim().is_empty() || name.contains(':') {
            return Err(format!("`{name}` is not a sector name (not empty, no `:`)"));
        }
        if self.sectors.iter().any(|s| s.name == name) {
            return Err(format!("a sector named `{name}` exists already"));
        }
        let template = &self.sectors[ts];
        let floor: Vec<Tile> =
            template.arenas.iter().flat_map(|a| a.tiles.iter().copied()).collect();
        let (Some(min_x), Some(min_y)) =
            (floor.iter().map(|t| t.x).min(), floor.iter().map(|t| t.y).min())
        else {
            return Err(format!("`{}` has no floor to copy", template.name));
        };
        let max_x = floor.iter().map(|t| t.x).max().unwrap_or(min_x);
        let max_y = floor.iter().map(|t| t.y).max().unwrap_or(min_y);
        // The floor and the ring of walls (and doors) around it.
        let (x0, y0) = (min_x.saturating_sub(1), min_y.saturating_sub(1));
        let x1 = max_x.saturating_add(1).min(self.grid.width().saturating_sub(1));
        let y1 = max_y.saturating_add(1).min(self.grid.height().saturating_sub(1));
        let (w, h) = (x1 - x0 + 1, y1 - y0 + 1);
        let too_far = || {
            format!(
                "a building at ({}, {}) would grow the map past {MAX_SIDE} tiles a side",
                origin.x, origin.y
            )
        };
        let end_x = origin.x.checked_add(w).filter(|e| *e < MAX_SIDE).ok_or_else(too_far)?;
        let end_y = origin.y.checked_add(h).filter(|e| *e < MAX_SIDE).ok_or_else(too_far)?;
        // The map grows to hold the copy and a street of open ground past it.
        let width = self.grid.width().max(end_x + 1);
        let height = self.grid.height().max(end_y + 1);
        let mut cells = Vec::with_capacity(usize::from(width) * usize::from(height));
        for y in 0..height {
            for x in 0..width {
                cells.push(self.grid.cell(Tile { x, y }).unwrap_or(Cell::Open));
            }
        }
        let at = |t: Tile| usize::from(t.y) * usize::from(width) + usize::from(t.x);
        let new_si = self.sectors.len();
        let si_u16 =
            u16::try_from(new_si).map_err(|_| "the town has too many sectors".to_owned())?;
        for dy in 0..h {
            for dx in 0..w {
                let to = Tile { x: origin.x + dx, y: origin.y + dy };
                let here = cells[at(to)];
                if here != Cell::Open {
                    let what = match self.address_of(to) {
                        Some(address) => format!("the floor of {address}"),
                        None => "a wall".to_owned(),
                    };
                    return Err(format!(
                        "the building would cover ({}, {}), which is {what}: choose open ground \
                         (`.` on the map) or a place past the map's edge",
                        to.x, to.y
                    ));
                }
                cells[at(to)] = match self.grid.cell(Tile { x: x0 + dx, y: y0 + dy }) {
                    Some(Cell::Arena(s, a)) if usize::from(s) == ts => Cell::Arena(si_u16, a),
                    Some(Cell::Wall) => Cell::Wall,
                    _ => Cell::Open,
                };
            }
        }
        let shift = |t: Tile| Tile { x: t.x - x0 + origin.x, y: t.y - y0 + origin.y };
        let sector = Sector {
            name: name.to_owned(),
            kind: template.kind.clone(),
            arenas: template
                .arenas
                .iter()
                .map(|a| Arena {
                    name: a.name.clone(),
                    public: a.public,
                    tiles: a.tiles.iter().copied().map(shift).collect(),
                    objects: a
                        .objects
                        .iter()
                        .map(|o| Object {
                            name: o.name.clone(),
                            at: shift(o.at),
                            states: o.states.clone(),
                        })
                        .collect(),
                })
                .collect(),
        };
        let grid = Grid::new(width, height, cells);
        if let Some((a, b)) = grid.disconnected_pair() {
            return Err(format!(
                "the building would leave ({}, {}) unable to reach ({}, {})",
                a.x, a.y, b.x, b.y
            ));
        }
        let prices: Vec<Price> = self
            .prices
            .iter()
            .filter(|p| p.sector == template.name)
            .map(|p| Price { sector: name.to_owned(), item: p.item.clone(), cents: p.cents })
            .collect();
        self.sectors.push(sector);
        self.prices.extend(prices);
        self.grid = grid;
        (self.tree, self.root) = environment_tree(&self.name, &self.sectors);
        Ok(())
    }
}

/// The town as it stood after `events` (a branch's, in order): the recorded town file,
/// with the buildings added since. `None` if no town was recorded or it does not load.
pub fn recorded_town(events: &[Event]) -> Option<Definition> {
    let mut town: Option<Definition> = None;
    for e in events {
        match &e.body {
            Body::TownLoaded(t) => town = Definition::parse(&t.name, &t.source).ok(),
            Body::Intervened(i) => {
                if let (Some(town), Intervention::AddBuilding { template, name, origin }) =
                    (town.as_mut(), &i.intervention)
                {
                    // A building that does not fit was never written by this engine; the
                    // fold skips it.
                    let _ = town.add_building(template, name, *origin);
                }
            }
            Body::MayorActed(m) => {
                if let (Some(town), MayorAct::Found { template, name, site, .. }) =
                    (town.as_mut(), &m.act)
                {
                    let origin = town.mayor.as_ref().and_then(|rules| {
                        rules.sites.iter().find(|s| s.name == *site).map(|s| s.origin)
                    });
                    if let Some(origin) = origin {
                        let _ = town.add_building(template, name, origin);
                    }
                }
            }
            _ => {}
        }
    }
    town
}
