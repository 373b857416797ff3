//! Objects change state through agents' actions ("coffee machine: brewing coffee"), as
//! `ObjectStateChanged` events, and return to their resting state when the action ends.

use hamlet_log::event::{AgentId, Body, NewEvent, ObjectStateChanged};

use super::{Definition, Object};

/// Why an object cannot take a state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectError {
    /// No object at that address.
    #[error("no object `{0}` (expected sector:arena:object)")]
    NoObject(String),
    /// The object has no such state.
    #[error("{address} can be {states}, not `{state}`")]
    NoState {
        /// The object.
        address: String,
        /// What was asked.
        state: String,
        /// What it can be.
        states: String,
    },
}

/// The object at `sector:arena:object`.
pub fn object<'t>(town: &'t Definition, address: &str) -> Option<&'t Object> {
    let mut parts = address.splitn(3, ':');
    let (sector, arena, name) = (parts.next()?, parts.next()?, parts.next()?);
    let sector = town.sectors.iter().find(|s| s.name == sector)?;
    let arena = sector.arenas.iter().find(|a| a.name == arena)?;
    arena.objects.iter().find(|o| o.name == name)
}

/// `by` puts the object into `state` (one of its declared states) at `now`.
pub fn set_state(
    town: &Definition,
    address: &str,
    state: &str,
    by: Option<AgentId>,
    now: u64,
) -> Result<NewEvent, ObjectError> {
    let object = object(town, address).ok_or_else(|| ObjectError::NoObject(address.into()))?;
    if !object.states.iter().any(|s| s == state) {
        return Err(ObjectError::NoState {
            address: address.into(),
            state: state.into(),
            states: object.states.join(", "),
        });
    }
    Ok(NewEvent::new(
        now,
        Body::ObjectStateChanged(ObjectStateChanged {
            address: address.into(),
            state: state.into(),
            by,
        }),
    ))
}

/// The object returns to its resting state (the first it declares) at `now`.
pub fn rest(
    town: &Definition,
    address: &str,
    by: Option<AgentId>,
    now: u64,
) -> Result<NewEvent, ObjectError> {
    let resting = object(town, address)
        .and_then(|o| o.states.first())
        .ok_or_else(|| ObjectError::NoObject(address.into()))?
        .clone();
    set_state(town, address, &resting, by, now)
}

/// The state an object at `address` takes while used: the first it declares after its
/// resting one ("cooking" for a stove, "being slept in" for a bed); `None` when the address
/// is not an object or the object has only one state.
pub fn in_use<'t>(town: &'t Definition, address: &str) -> Option<&'t str> {
    object(town, address).and_then(|o| o.states.get(1)).map(String::as_str)
}

/// Everyday activities and the objects they are done at, most fitting first: an action
/// planned within an hour at home takes the hour's place ("wakes up and gets ready" at the
/// bed), but breakfast belongs at the kitchen table, not in bed. Names are matched whole.
const BELONGS_AT: &[(&[&str], &[&str])] = &[
    (
        &["breakfast", "lunch", "dinner", "supper", "meal", "eat", "eats", "eating", "snack"],
        &[
            "kitchen table",
            "dining table",
            "window table",
            "corner table",
            "long table",
            "picnic table",
            "booth",
            "kitchenette stove",
            "stove",
        ],
    ),
    (&["cook", "cooks", "cooking", "bake", "bakes", "baking"], &["stove", "oven"]),
    (&["coffee", "tea"], &["coffee machine", "kettle", "kitchen table", "dining table"]),
    (&["dressed", "dresses", "clothes", "outfit"], &["wardrobe", "dressing table"]),
    (&["paint", "paints", "painting", "sketch", "sketches"], &["easel"]),
    (&["guitar"], &["guitar"]),
    (&["piano"], &["piano"]),
    (&["laundry"], &["washing machine"]),
    (
        &["read", "reads", "reading", "book", "books", "study", "studies", "homework"],
        &["study carrel", "reading table", "desk", "bookshelf"],
    ),
    (
        &["write", "writes", "writing", "letter", "letters", "emails", "grades", "notes"],
        &["writing desk", "desk"],
    ),
    (&["television", "tv"], &["television", "sofa"]),
    (&["radio", "music"], &["radio", "jukebox"]),
    (&["relax", "relaxes", "rests", "unwinds"], &["sofa", "armchair"]),
];

/// Where in its hour's building an action belongs: the object of `address`'s sector that
/// [`BELONGS_AT`] says `activity` is done at, in the hour's own room if one is there, else
/// in another room of the building that is nobody's home (a flatmate's bedroom is not
/// borrowed); `None` when the activity names none of them, or no such object is there (then
/// the hour's place stands). A pure function of the definition.
pub fn object_for(town: &Definition, address: &str, activity: &str) -> Option<String> {
    let mut parts = address.splitn(3, ':');
    let (sector_name, arena_name) = (parts.next()?, parts.next()?);
    let sector = town.sectors.iter().find(|s| s.name == sector_name)?;
    let words: Vec<String> = activity
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let someone_elses = |arena: &str| {
        arena != arena_name
            && town.personas.iter().any(|p| p.home == format!("{sector_name}:{arena}"))
    };
    let (_, objects) =
        BELONGS_AT.iter().find(|(names, _)| words.iter().any(|w| names.contains(&w.as_str())))?;
    // The hour's room first, then the others in the order the town lists them.
    let rooms =
        sector.arenas.iter().filter(|a| a.name == arena_name).chain(
            sector.arenas.iter().filter(|a| !someone_elses(&a.name) && a.name != arena_name),
        );
    let rooms: Vec<_> = rooms.collect();
    objects.iter().find_map(|wanted| {
        rooms.iter().find_map(|room| {
            room.objects
                .iter()
                .find(|o| o.name == *wanted)
                .map(|o| format!("{sector_name}:{}:{}", room.name, o.name))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_everyday_action_goes_to_the_object_it_belongs_at_in_its_hours_building() {
        let town = Definition::parse("t.toml", super::super::WILLOWMERE).unwrap();
        let at = |address: &str, activity: &str| object_for(&town, address, activity);
        let breakfast = "eats breakfast and drinks coffee.";
        assert_eq!(
            at("Ashcombe house:bedroom:double bed", breakfast).as_deref(),
            Some("Ashcombe house:kitchen:kitchen table")
        );
        assert_eq!(
            at("Reedbank dorm:room 1:bed", breakfast).as_deref(),
            Some("Reedbank dorm:common room:kitchenette stove"),
            "the dorm has no table to eat at but the kitchenette"
        );
        assert_eq!(
            at("Marigold café:counter:cash register", breakfast).as_deref(),
            Some("Marigold café:dining room:window table")
        );
        assert_eq!(
            at("Ashcombe house:bedroom:double bed", "gets dressed").as_deref(),
            Some("Ashcombe house:bedroom:wardrobe")
        );
        // The hour's own room first; a flatmate's bedroom is never borrowed.
        assert_eq!(
            at("Brindle Row apartments:flat B bedroom:bed", "reads a novel").as_deref(),
            Some("Brindle Row apartments:flat B bedroom:desk")
        );
        assert_eq!(at("Brindle Row apartments:flat A bedroom:easel", "reads a novel"), None);
        assert_eq!(
            at("Brindle Row apartments:flat A bedroom:bed", "paints the harbour").as_deref(),
            Some("Brindle Row apartments:flat A bedroom:easel")
        );
        // Work, and what names no everyday object, stays where its hour is.
        assert_eq!(at("Willowmere college:lecture hall:lectern", "teaches history"), None);
        assert_eq!(at("Ashcombe house:bedroom:double bed", "wakes up and gets ready"), None);
        assert_eq!(at("Nowhere:at:all", breakfast), None);
    }
}
