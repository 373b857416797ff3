//! Conversations: every open one run concurrently to its end (alternating lines until one
//! ends it, falls silent, echoes, or the turn limit; by rulebook 5 written whole in one
//! call), then both agents remember it, spend the next minutes talking, and re-plan the rest
//! of the hour it interrupted.
//! Must not: start a conversation (a reaction in `agent.rs` does, the step writes it), or
//! let the order in which answers arrive reach the log (batches are joined in the order
//! the conversations started).

use hamlet_log::event::{AgentId, ConversationEnded, MemoryKind};
use hamlet_log::{Body, EventId};

use crate::mind::respond::{script, speak, LineCheck, Side, Situation};
use crate::mind::social::{accept_invitation, intention, invitation_in, Agreed};
use crate::mind::think::{remember, update_picture, Who};
use crate::mind::validate::Facts;
use crate::pending::{Cause, Pending, PendingId};
use crate::rulebook::Mechanism;
use crate::store::Storage;
use crate::town::actions;

use super::{Sim, SimError};

/// Where a talk on the open ground is held, in its prompts and memories (rulebook 9,
/// [`crate::rulebook::Rulebook::words_the_open_ground`]).
const OPEN_GROUND_TALK: &str = "the roadside";

impl<S: Storage> Sim<S> {
    /// Runs every open conversation to its end, concurrently; commits them in order.
    pub(super) async fn converse_all(&mut self) -> Result<(), SimError> {
        let open = self.folds.started.clone();
        if open.is_empty() {
            return Ok(());
        }
        let this = &*self;
        let talked = futures::future::join_all(open.iter().map(|&c| this.converse(c))).await;
        let mut batch = Pending::new();
        let mut failure = None;
        for (pending, result) in talked {
            batch.append(pending);
            if let Err(e) = result {
                failure = failure.or(Some(e));
            }
        }
        self.commit(batch)?;
        failure.map_or(Ok(()), Err)
    }

    /// One open conversation, to its end: the agents speak in turn (the one who started
    /// first) until one ends it, falls silent, or the turn limit; then each remembers it,
    /// spends the next minutes talking, and re-plans the rest of the hour it interrupted.
    async fn converse(&self, conversation: EventId) -> (Pending, Result<(), SimError>) {
        let mut pending = Pending::new();
        let result = self.converse_into(conversation, &mut pending).await;
        (pending, result)
    }

    async fn converse_into(
        &self,
        conversation: EventId,
        pending: &mut Pending,
    ) -> Result<(), SimError> {
        let now = self.folds.state.sim_time_secs;
        let style = self.settings.style;
        let Some(open) = self.folds.dialogues.get(&conversation) else { return Ok(()) };
        let (agents, address, said) = (open.agents.clone(), &open.address, &open.lines);
        if agents.len() < 2 {
            let ended = ConversationEnded { conversation, reason: "nobody to talk with".into() };
            pending.push(now, Body::ConversationEnded(ended), &[Cause::Logged(conversation)]);
            return Ok(());
        }
        let names: Vec<String> = agents
            .iter()
            .map(|a| self.folds.state.agents.get(a).map_or_else(String::new, |x| x.name.clone()))
            .collect();
        let place = if address.trim().is_empty() && self.settings.rulebook.words_the_open_ground() {
            OPEN_GROUND_TALK.to_owned()
        } else {
            address.replace(':', ", ")
        };
        let time = self.town.moment_words(now);
        let mut dialogue: Vec<(String, String)> = said
            .iter()
            .map(|(speaker, text)| {
                let i = agents.iter().position(|a| a == speaker).unwrap_or(0);
                (names[i].clone(), text.clone())
            })
            .collect();
        let rulebook = self.settings.rulebook;
        // Rulebook 4: what each speaker wants from the talk, decided before its first line
        // (or folded, when the conversation was begun before a resume).
        let mut intents: Vec<Option<String>> = vec![None; agents.len()];
        // Rulebook 6: a speaker who invites the other to a hosted event means to, and is not
        // asked what it wants.
        let invitations: Vec<Option<(String, Agreed)>> = agents
            .iter()
            .map(|&agent| {
                let ours = self.folds.inviting.get(&conversation).into_iter().flatten();
                let it = ours.filter(|_| rulebook.uses(Mechanism::Inviting)).find(|i| {
                    i.inviter == agent && agents.len() == 2 && agents.contains(&i.invitee)
                })?;
                Some(self.invitation_words(it))
            })
            .collect();
        for (i, invitation) in invitations.iter().enumerate() {
            intents[i] = invitation.as_ref().map(|(intent, _)| intent.clone());
        }
        if rulebook.uses(Mechanism::Intentions) {
            for (i, &agent) in agents.iter().enumerate() {
                if intents[i].is_some() {
                    continue;
                }
                if let Some(known) = self.folds.intents.get(&(conversation, agent)) {
                    intents[i] = Some(known.clone());
                    continue;
                }
                let other = &names[(i + 1) % agents.len()];
                let summary = self.summary(agent);
                let status = self.status(agent, now);
                let who = Situation {
                    town: &self.town.name,
                    agent,
                    name: &names[i],
                    summary: &summary,
                    time: &time,
                    status: &status,
                    stream: self.folds.minds.stream(agent),
                    rulebook,
                };
                let (intent, _) = intention(
                    &self.gateway,
                    style,
                    &who,
                    other,
                    &place,
                    conversation,
                    now,
                    &self.settings.retrieval,
                    pending,
                )
                .await?;
                intents[i] = Some(intent);
            }
        }
        let facts: Vec<Option<Facts>> = names.iter().map(|n| self.facts_of(n)).collect();
        let mut last = None;
        let mut reason = "the turn limit".to_owned();
        let n = agents.len().max(1);
        // Rulebook 5: the conversation written whole, in one call.
        let scripted = rulebook.uses(Mechanism::Script) && n == 2 && dialogue.is_empty();
        if scripted {
            let (summaries, statuses): (Vec<String>, Vec<String>) = (0..2)
                .map(|i| (self.summary(agents[i]), format!("talking with {}", names[1 - i])))
                .unzip();
            let validators = rulebook.uses(Mechanism::Validators);
            let sides: Vec<Side> = (0..2)
                .map(|i| Side {
                    who: Situation {
                        town: &self.town.name,
                        agent: agents[i],
                        name: &names[i],
                        summary: &summaries[i],
                        time: &time,
                        status: &statuses[i],
                        stream: self.folds.minds.stream(agents[i]),
                        rulebook,
                    },
                    intent: intents[i].as_deref(),
                    check: validators.then(|| LineCheck {
                        facts: facts[i].as_ref(),
                        earlier: &self.folds.said,
                        speech: rulebook.checks_speech(),
                    }),
                })
                .collect();
            let (written, at) = script(
                &self.gateway,
                style,
                [&sides[0], &sides[1]],
                &place,
                conversation,
                self.settings.max_turns,
                now,
                &self.settings.retrieval,
                pending,
            )
            .await?;
            last = at;
            dialogue
                .extend(written.lines.iter().map(|(i, text)| (names[*i].clone(), text.clone())));
            reason = match written.lines.last() {
                Some((i, _)) if written.dropped == 0 => format!("{} ended it", names[*i]),
                Some((i, _)) => format!(
                    "{} ended it ({} faulty line{} left out)",
                    names[*i],
                    written.dropped,
                    if written.dropped == 1 { "" } else { "s" }
                ),
                None if written.dropped > 0 => format!("{} had nothing fit to say", names[0]),
                None => format!("{} fell silent", names[0]),
            };
        }
        while !scripted && dialogue.len() < self.settings.max_turns {
            let i = dialogue.len() % n;
            let (speaker, other) = (agents[i], &names[(i + 1) % n]);
            let summary = self.summary(speaker);
            let status = format!("talking with {other}");
            let who = Situation {
                town: &self.town.name,
                agent: speaker,
                name: &names[i],
                summary: &summary,
                time: &time,
                status: &status,
                stream: self.folds.minds.stream(speaker),
                rulebook,
            };
            let check = LineCheck {
                facts: facts[i].as_ref(),
                earlier: &self.folds.said,
                speech: rulebook.checks_speech(),
            };
            let (spoken, at) = speak(
                &self.gateway,
                style,
                &who,
                other,
                &place,
                conversation,
                &dialogue,
                intents[i].as_deref(),
                rulebook.uses(Mechanism::Validators).then_some(&check),
                now,
                &self.settings.retrieval,
                pending,
            )
            .await?;
            last = Some(at);
            let turn = spoken.turn;
            // A line that would say again what was already said is not said and ends it:
            // small models otherwise echo each other to the turn limit.
            if spoken.echo {
                reason = format!("{} had nothing new to say", names[i]);
                break;
            }
            if turn.say.is_empty() {
                reason = format!("{} fell silent", names[i]);
                break;
            }
            dialogue.push((names[i].clone(), turn.say));
            if turn.end {
                reason = format!("{} ended it", names[i]);
                break;
            }
        }
        let causes = match last {
            Some(at) => vec![Cause::Pending(at)],
            None => vec![Cause::Logged(conversation)],
        };
        let ended = pending.push(
            now,
            Body::ConversationEnded(ConversationEnded { conversation, reason }),
            &causes,
        );
        let talk_secs = self.talk_secs(dialogue.len());
        let lines: Vec<String> =
            dialogue.iter().map(|(speaker, text)| format!("{speaker}: \"{text}\"")).collect();
        // Rulebook 5: an intention that names a place and a time invited the other, who now
        // says whether it goes.
        let mut invited: Vec<Vec<(Agreed, Option<PendingId>)>> = vec![Vec::new(); n];
        let inviting = (rulebook.uses(Mechanism::Invitations)
            || invitations.iter().any(Option::is_some))
            && rulebook.uses(Mechanism::Commitments)
            && n == 2
            && !lines.is_empty();
        if inviting {
            let today = now / 86_400;
            let days: Vec<String> = (today..today + 3).map(|d| self.town.day_words(d)).collect();
            for i in 0..2 {
                let invitation = match (&invitations[i], intents[i].as_deref()) {
                    (Some((_, hosted)), _) => Some(hosted.clone()),
                    (None, Some(intent)) if rulebook.uses(Mechanism::Invitations) => {
                        let places: Vec<String> =
                            self.known(agents[i]).known.keys().cloned().collect();
                        invitation_in(intent, &places, &days, now)
                    }
                    _ => None,
                };
                let Some(invitation) = invitation else { continue };
                let j = 1 - i;
                let summary = self.summary(agents[j]);
                let who = Who {
                    town: &self.town.name,
                    agent: agents[j],
                    name: &names[j],
                    summary: &summary,
                };
                let day = self.town.day_words(invitation.start_secs / 86_400);
                let (going, asked) = accept_invitation(
                    &self.gateway,
                    style,
                    &who,
                    &names[i],
                    &invitation,
                    &day,
                    &place,
                    &time,
                    &lines,
                    &[Cause::Pending(ended)],
                    now,
                    pending,
                )
                .await?;
                invited[j].extend(going.map(|a| (a, asked)));
            }
        }
        for (i, &agent) in agents.iter().enumerate() {
            let other = &names[(i + 1) % n];
            let memory = if lines.is_empty() {
                format!("{} and {other} met at {place} but did not talk", names[i])
            } else {
                format!("{} talked with {other} at {place}. {}", names[i], lines.join(" "))
            };
            let summary = self.summary(agent);
            let who = Who { town: &self.town.name, agent, name: &names[i], summary: &summary };
            remember(
                &self.gateway,
                style,
                &who,
                MemoryKind::Chat,
                &[memory],
                &[],
                &[Cause::Pending(ended)],
                now,
                pending,
            )
            .await?;
            let description = format!("talking with {other}");
            let here = self.address_of(agent);
            let start = actions::Start {
                agent,
                description: &description,
                emoji: "💬",
                address: &here,
                duration_secs: talk_secs as u32,
                object_state: None,
                plan_item: None,
            };
            if let Ok(events) = actions::start(&self.town, &self.folds.state, &start, now) {
                for e in events {
                    pending.push(now, e.body, &[Cause::Pending(ended)]);
                }
            }
            // Rulebook 4: a planning note, and the commitments agreed to; a commitment for
            // today re-plans the day around it.
            let mut replanned = false;
            if rulebook.uses(Mechanism::Commitments) && !lines.is_empty() {
                let with: Vec<AgentId> = agents.iter().copied().filter(|a| *a != agent).collect();
                replanned = self
                    .take_notes(
                        agent,
                        &who,
                        other,
                        &place,
                        &time,
                        &lines,
                        conversation,
                        &with,
                        &invited[i],
                        ended,
                        now,
                        pending,
                    )
                    .await?;
            }
            // An agent remembering by `long_short` writes its picture of the other again.
            if !lines.is_empty() && self.folds.minds.stream(agent).long_short() {
                update_picture(
                    &self.gateway,
                    style,
                    &who,
                    self.folds.minds.stream(agent),
                    other,
                    &lines,
                    &[],
                    &[Cause::Pending(ended)],
                    now,
                    pending,
                )
                .await?;
            }
            // Re-plan the rest of the hour the conversation interrupted.
            if !replanned {
                let after = format!("after talking with {other}");
                self.replan_rest_of_hour(agent, &names[i], &after, now + talk_secs, now, pending)
                    .await?;
            }
        }
        Ok(())
    }
}
