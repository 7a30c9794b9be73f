// Evaluates requests against IAM policies with @cloud-copilot/iam-simulate,
// an IAM evaluator that is not shardline's (TestTenantPoliciesOffline).
//
// Usage: node evaluate.cjs <tools dir>, with on stdin
//   {"cases": [{"principal": ARN, "action": "execute-api:Invoke",
//               "resource": ARN, "account": "123456789012",
//               "policies": [policy document, ...]}, ...]}
// and on stdout one line of JSON, a decision per case in order:
//   [{"result": "Allowed" | "ImplicitlyDenied" | "ExplicitlyDenied"}
//    or {"error": "..."} when the simulator refused the case as invalid].
'use strict'

const path = require('node:path')
const { createRequire } = require('node:module')

async function main() {
  const tools = process.argv[2]
  if (!tools) throw new Error('usage: node evaluate.cjs <tools dir>')
  const load = createRequire(path.join(path.resolve(tools), 'package.json'))
  const { runSimulation } = load('@cloud-copilot/iam-simulate')

  let input = ''
  for await (const chunk of process.stdin) input += chunk
  const { cases } = JSON.parse(input)

  const out = []
  for (const c of cases) {
    const response = await runSimulation(
      {
        request: {
          principal: c.principal,
          action: c.action,
          resource: { resource: c.resource, accountId: c.account },
          contextVariables: {}
        },
        identityPolicies: c.policies.map((policy, i) => ({ name: 'policy' + i, policy })),
        serviceControlPolicies: [],
        resourceControlPolicies: []
      },
      { simulationMode: 'Strict' }
    )
    if (response.resultType === 'error') {
      out.push({ error: JSON.stringify(response.errors) })
    } else if (response.resultType !== 'single') {
      out.push({ error: 'the simulator answered ' + response.resultType + ' for one resource' })
    } else {
      out.push({ result: response.overallResult })
    }
  }
  process.stdout.write(JSON.stringify(out) + '\n')
}

main().catch((err) => {
  process.stderr.write(String((err && err.stack) || err) + '\n')
  process.exit(1)
})
