//! The tile grid: walls, open ground and arena floors; movement by A* over the walkable
//! tiles (petgraph), four neighbours per tile.

use hamlet_log::event::Tile;
use petgraph::algo::astar;
use petgraph::graphmap::UnGraphMap;

/// What a tile is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cell {
    /// Blocks movement.
    Wall,
    /// Walkable, outside every sector.
    Open,
    /// Walkable floor of an arena: sector and arena index.
    Arena(u16, u16),
}

/// The tile grid and its walking graph.
#[derive(Clone, Debug)]
pub struct Grid {
    width: u16,
    height: u16,
    // Invariant: width × height cells, row-major.
    cells: Vec<Cell>,
    walk: UnGraphMap<(u16, u16), ()>,
}

impl Grid {
    /// A grid of `width × height` cells, row-major.
    pub fn new(width: u16, height: u16, mut cells: Vec<Cell>) -> Grid {
        cells.resize(usize::from(width) * usize::from(height), Cell::Wall);
        let mut grid = Grid { width, height, cells, walk: UnGraphMap::new() };
        for y in 0..height {
            for x in 0..width {
                let here = Tile { x, y };
                if !grid.is_walkable(here) {
                    continue;
                }
                grid.walk.add_node((x, y));
                for there in [Tile { x: x + 1, y }, Tile { x, y: y + 1 }] {
                    if grid.is_walkable(there) {
                        grid.walk.add_edge((x, y), (there.x, there.y), ());
                    }
                }
            }
        }
        grid
    }

    /// Columns.
    pub fn width(&self) -> u16 {
        self.width
    }
    /// Rows.
    pub fn height(&self) -> u16 {
        self.height
    }

    /// The cell at a tile; `None` off the map.
    pub fn cell(&self, tile: Tile) -> Option<Cell> {
        if tile.x >= self.width || tile.y >= self.height {
            return None;
        }
        self.cells.get(usize::from(tile.y) * usize::from(self.width) + usize::from(tile.x)).copied()
    }

    /// Whether an agent may stand on a tile.
    pub fn is_walkable(&self, tile: Tile) -> bool {
        matches!(self.cell(tile), Some(Cell::Open | Cell::Arena(..)))
    }

    /// The arena (sector, arena index) a tile is floor of.
    pub fn arena_at(&self, tile: Tile) -> Option<(usize, usize)> {
        match self.cell(tile)? {
            Cell::Arena(s, a) => Some((usize::from(s), usize::from(a))),
            _ => None,
        }
    }

    /// The shortest walk from `from` to `to`, both included, one tile per step; `None` if
    /// either is not walkable or no walk exists. Deterministic: ties break the same way
    /// on every machine.
    pub fn path(&self, from: Tile, to: Tile) -> Option<Vec<Tile>> {
        if !self.is_walkable(from) || !self.is_walkable(to) {
            return None;
        }
        let goal = (to.x, to.y);
        let (_, nodes) = astar(
            &self.walk,
            (from.x, from.y),
            |n| n == goal,
            |_| 1u32,
            |(x, y)| u32::from(x.abs_diff(goal.0)) + u32::from(y.abs_diff(goal.1)),
        )?;
        Some(nodes.into_iter().map(|(x, y)| Tile { x, y }).collect())
    }

    /// Two walkable tiles with no walk between them, if the map has any.
    pub fn disconnected_pair(&self) -> Option<(Tile, Tile)> {
        let first = self.walk.nodes().next()?;
        let mut seen = std::collections::BTreeSet::from([first]);
        let mut frontier = vec![first];
        while let Some(n) = frontier.pop() {
            for m in self.walk.neighbors(n) {
                if seen.insert(m) {
                    frontier.push(m);
                }
            }
        }
        let stranded = self.walk.nodes().find(|n| !seen.contains(n))?;
        Some((Tile { x: first.0, y: first.1 }, Tile { x: stranded.0, y: stranded.1 }))
    }

    /// The map as text, one character per tile, with `marks` drawn over it.
    pub fn render(&self, legend: impl Fn(usize, usize) -> char, marks: &[(Tile, char)]) -> String {
        let mut out =
            String::with_capacity((usize::from(self.width) + 1) * usize::from(self.height));
        for y in 0..self.height {
            for x in 0..self.width {
                let tile = Tile { x, y };
                let c = match marks.iter().find(|(t, _)| *t == tile) {
                    Some((_, m)) => *m,
                    None => match self.cell(tile) {
                        Some(Cell::Wall) | None => '#',
                        Some(Cell::Open) => '.',
                        Some(Cell::Arena(s, a)) => legend(usize::from(s), usize::from(a)),
                    },
                };
                out.push(c);
            }
            out.push('\n');
        }
        out
    }
}
