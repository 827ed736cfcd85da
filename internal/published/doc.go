// Package published is the server's side of what skillserver serves: the
// immutable [Snapshot] every request is answered from, the [Source] that
// hands out the current one, and the one builder of snapshots,
// [NewSnapshot], which the catalog source, merges, access rules, the
// gateway and the registry all use.
//
// Publishers outside skillport implement skillserver.SkillSource (list
// skills, read a file); skillserver adapts it to a Source. The sources of
// this module implement Source themselves, so the server answers from
// their snapshots (and the encodings it caches of them) directly; each
// also lists and reads as a SkillSource does ([ListSkills], [ReadFile]),
// which is how skillserver.New and skillserver.Attach accept them.
package published
