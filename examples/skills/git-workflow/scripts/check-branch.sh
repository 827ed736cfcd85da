#!/bin/sh
# Exit non-zero when the current branch name breaks the <type>/<topic> convention.
branch=$(git rev-parse --abbrev-ref HEAD) || exit 2
case "$branch" in
  main) exit 0 ;;
  feat/*|fix/*|docs/*|chore/*) exit 0 ;;
esac
echo "branch '$branch' should be <feat|fix|docs|chore>/<topic>" >&2
exit 1
