// This module exists only to keep the Go tool out of tools/node_modules,
// which holds npm packages (the CDK CLI ships .go templates).
module tools
