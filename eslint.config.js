// Lint: ESLint's and typescript-eslint's recommended rules, with type information, over the
// whole TypeScript tree. Formatting is Prettier's (npm run format:check), not ESLint's.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Comments cite what a reader of the repository can open: its own docs, RFCs, vendors'
// public pages; not working notes kept elsewhere.
const OUTSIDE_DOCUMENT =
  /\b(?:CONTRACT|DESIGN|STACK)(?:\.md\b|\s*§)|\bspec\/return-address-service|\bthe specification \(§/;
const roost = {
  rules: {
    'no-outside-citations': {
      meta: {
        type: 'problem',
        schema: [],
        messages: { outside: 'A comment cites "{{ text }}", a document outside the repository.' },
      },
      create(context) {
        return {
          Program() {
            for (const comment of context.sourceCode.getAllComments()) {
              const match = OUTSIDE_DOCUMENT.exec(comment.value);
              if (match) context.report({ loc: comment.loc, messageId: 'outside', data: { text: match[0] } });
            }
          },
        };
      },
    },
  },
};

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/'] },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
  },
  {
    rules: {
      // node:test's describe/it return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite'] },
          ],
        },
      ],
      // Fastify plugins and the Storage interface's methods are async by signature, await or not.
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
  {
    // One module, one concern: past 600 lines a module of src/ is split (README.md § Layout).
    files: ['src/**/*.ts', 'src/**/*.tsx'],
    plugins: { roost },
    rules: {
      'max-lines': ['error', { max: 600, skipBlankLines: false, skipComments: false }],
      'roost/no-outside-citations': 'error',
    },
  },
  {
    // Tests and benchmarks read untyped JSON responses and assert their shape field by field.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    // Every server error is a row of the catalogue (src/core/errors.ts), made by its constructor.
    files: ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    ignores: ['src/core/errors.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "NewExpression[callee.name='ServiceError']",
          message: 'Make server errors from the catalogue in src/core/errors.ts (errors.<name>(…)), never inline.',
        },
        {
          selector: "ClassDeclaration[superClass.name='ServiceError'], ClassExpression[superClass.name='ServiceError']",
          message: 'Add a row to the catalogue in src/core/errors.ts instead of a subclass of ServiceError.',
        },
      ],
    },
  },
  { files: ['**/*.js', '**/*.cjs'], extends: [tseslint.configs.disableTypeChecked] },
  // .dependency-cruiser.cjs: the dependency-cruiser config, CommonJS as the tool expects.
  { files: ['**/*.cjs'], languageOptions: { sourceType: 'commonjs', globals: { module: 'writable' } } },
  // Build scripts run on Node; src/web runs in the browser (TypeScript, whose lib checks its globals).
  { files: ['scripts/**/*.js'], languageOptions: { globals: { console: 'readonly', process: 'readonly' } } },
);
