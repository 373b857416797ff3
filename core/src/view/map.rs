//! The map the viewer draws: a town definition's tile grid (walls, open ground, each
//! arena's floor), its sectors and arenas with where to put their labels, and its objects.

use serde::Serialize;

use crate::describe::printable;
use crate::town::map::Cell;
use crate::town::Definition;
use hamlet_log::event::Tile;

/// A town's map.
#[derive(Clone, Debug, Serialize)]
pub struct MapView {
    /// The town's name.
    pub name: String,
    /// Columns.
    pub width: u16,
    /// Rows.
    pub height: u16,
    /// `width × height` cells, row-major: 0 wall, 1 open ground, 2 + i the floor of
    /// `arenas[i]`.
    pub cells: Vec<u32>,
    /// Every arena, in the town file's order.
    pub arenas: Vec<ArenaView>,
    /// Every sector.
    pub sectors: Vec<SectorView>,
    /// Every object.
    pub objects: Vec<ObjectView>,
}

/// A room or yard.
#[derive(Clone, Debug, Serialize)]
pub struct ArenaView {
    /// Its sector's name.
    pub sector: String,
    /// Its name.
    pub arena: String,
    /// Its sector's kind (`home`, `cafe`, …).
    pub kind: String,
    /// The floor tile nearest its middle, for its label.
    pub label: [u16; 2],
}

/// A building or an outdoor place.
#[derive(Clone, Debug, Serialize)]
pub struct SectorView {
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: String,
    /// Where its label goes: above the middle of its bounds.
    pub label: [u16; 2],
    /// The tiles it covers, `[x0, y0, x1, y1]` inclusive.
    pub bounds: [u16; 4],
}

/// A thing in an arena.
#[derive(Clone, Debug, Serialize)]
pub struct ObjectView {
    /// `sector:arena:object`.
    pub address: String,
    /// Its name.
    pub name: String,
    /// Where it stands.
    pub tile: [u16; 2],
}

/// Of `tiles`, the one nearest their mean.
fn middle(tiles: &[Tile]) -> [u16; 2] {
    let n = tiles.len().max(1) as i64;
    let (sx, sy) =
        tiles.iter().fold((0i64, 0i64), |(x, y), t| (x + i64::from(t.x), y + i64::from(t.y)));
    let (mx, my) = (sx / n, sy / n);
    tiles
        .iter()
        .min_by_key(|t| (i64::from(t.x) - mx).pow(2) + (i64::from(t.y) - my).pow(2))
        .map_or([0, 0], |t| [t.x, t.y])
}

impl MapView {
    /// The map of a town definition.
    pub fn of(d: &Definition) -> MapView {
        let (width, height) = (d.grid.width(), d.grid.height());
        let mut index = std::collections::BTreeMap::new();
        let mut arenas = Vec::new();
        let mut sectors = Vec::new();
        let mut objects = Vec::new();
        for (si, s) in d.sectors.iter().enumerate() {
            let mut bounds = [u16::MAX, u16::MAX, 0, 0];
            for (ai, a) in s.arenas.iter().enumerate() {
                index.insert((si, ai), arenas.len() as u32);
                arenas.push(ArenaView {
                    sector: printable(&s.name),
                    arena: printable(&a.name),
                    kind: printable(&s.kind),
                    label: middle(&a.tiles),
                });
                for t in &a.tiles {
                    bounds = [
                        bounds[0].min(t.x),
                        bounds[1].min(t.y),
                        bounds[2].max(t.x),
                        bounds[3].max(t.y),
                    ];
                }
                for o in &a.objects {
                    objects.push(ObjectView {
                        address: printable(&format!("{}:{}:{}", s.name, a.name, o.name)),
                        name: printable(&o.name),
                        tile: [o.at.x, o.at.y],
                    });
                }
            }
            if bounds[0] == u16::MAX {
                continue;
            }
            // Walls around the floors belong to the building too.
            let bounds = [
                bounds[0].saturating_sub(1),
                bounds[1].saturating_sub(1),
                bounds[2].saturating_add(1).min(width.saturating_sub(1)),
                bounds[3].saturating_add(1).min(height.saturating_sub(1)),
            ];
            sectors.push(SectorView {
                name: printable(&s.name),
                kind: printable(&s.kind),
                label: [bounds[0] + (bounds[2] - bounds[0]) / 2, bounds[1]],
                bounds,
            });
        }
        let mut cells = Vec::with_capacity(usize::from(width) * usize::from(height));
        for y in 0..height {
            for x in 0..width {
                cells.push(match d.grid.cell(Tile { x, y }) {
                    Some(Cell::Open) => 1,
                    Some(Cell::Arena(s, a)) => {
                        index.get(&(usize::from(s), usize::from(a))).map_or(1, |i| i + 2)
                    }
                    Some(Cell::Wall) | None => 0,
                });
            }
        }
        MapView { name: printable(&d.name), width, height, cells, arenas, sectors, objects }
    }

    /// Open ground of `extent` tiles, for a recording without a town file (a synthetic one).
    pub fn open_ground(name: &str, extent: [u16; 2]) -> MapView {
        let [width, height] = [extent[0].max(1), extent[1].max(1)];
        MapView {
            name: name.to_owned(),
            width,
            height,
            cells: vec![1; usize::from(width) * usize::from(height)],
            arenas: Vec::new(),
            sectors: Vec::new(),
            objects: Vec::new(),
        }
    }
}
